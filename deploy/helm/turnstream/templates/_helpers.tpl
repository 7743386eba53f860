{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "turnstream.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; pass (dict "ctx" $ "component" "worker"). */}}
{{- define "turnstream.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: turnstream
{{ include "turnstream.selectorLabels" . }}
{{- end -}}

{{/* The labels that select a component's pods. */}}
{{- define "turnstream.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "turnstream.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "turnstream.apiKeysSecret" -}}
{{ .Values.worker.apiKeys.secretName | default (printf "%s-api-keys" (include "turnstream.fullname" .)) }}
{{- end -}}

{{/* --metrics-addr and the port the probes use. */}}
{{- define "turnstream.metricsAddr" -}}
{{ printf ":%d" (int .Values.metrics.port) }}
{{- end -}}

{{/* NATS_URL and NATS_INBOX_PREFIX of a component; pass (dict "ctx" $ "nats" .Values.worker.nats). */}}
{{- define "turnstream.natsEnv" -}}
- name: NATS_URL
{{- if .nats.urlSecret.name }}
  valueFrom:
    secretKeyRef:
      name: {{ .nats.urlSecret.name }}
      key: {{ .nats.urlSecret.key | default "NATS_URL" }}
{{- else }}
  value: {{ required "nats.url (or a component's nats.urlSecret) is required" .ctx.Values.nats.url | quote }}
{{- end }}
- name: NATS_INBOX_PREFIX
  value: {{ .nats.inboxPrefix | quote }}
{{- end -}}

{{/* Probes on the metrics port; the worker and the tool workers share them. */}}
{{- define "turnstream.probes" -}}
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 5
  failureThreshold: 3
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  initialDelaySeconds: 10
  periodSeconds: 10
  failureThreshold: 3
{{- end -}}

{{- define "turnstream.podAnnotations" -}}
{{- if .Values.metrics.annotations -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}
