package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
)

// TestTracingErrorsGoToTheLog: with the exporter on, what OpenTelemetry
// reports (a collector unreachable) is a warning of the command's log, a
// JSON line, not stdlib text on stderr; the endpoint is logged without
// credentials.
func TestTracingErrorsGoToTheLog(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	p, err := startTracing(context.Background(), "http://user:pw@127.0.0.1:1/v1/traces", "turnstream-test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer stopTracing(context.Background(), p, zerolog.Nop())
	otel.Handle(errors.New("collector unreachable"))
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		levels = append(levels, rec["level"].(string)+":"+rec["message"].(string))
	}
	if len(levels) != 2 || levels[1] != "warn:exporting traces failed" || !strings.Contains(buf.String(), "collector unreachable") {
		t.Errorf("log = %q; want the start, then the error as a warning", buf.String())
	}
	if strings.Contains(buf.String(), "pw@") {
		t.Errorf("the log holds the endpoint's credentials: %s", buf.String())
	}
}
