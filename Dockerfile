# syntax=docker/dockerfile:1
#
# The turnstream image: one static binary on distroless, run as a non-root
# user. Every subcommand is in it (worker, tools, mockllm, submit, ...):
#
#   docker build -t turnstream:dev --build-arg VERSION=$(git describe --always --dirty) .
#   docker run --rm turnstream:dev help
#
# VERSION is linked into main.version (-X); cmd/turnstream declares no such
# variable yet, and the linker ignores -X for a missing one, so until a
# `turnstream version` command declares it the argument only labels the image.
# `go test ./deploy/` lints this file (deploy/dockerfile_test.go).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only what the binary is built from (schemas/ holds embedded JSON Schemas).
COPY cmd/ cmd/
COPY internal/ internal/
COPY pkg/ pkg/
COPY schemas/ schemas/
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/turnstream ./cmd/turnstream

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="turnstream" \
      org.opencontainers.image.source="https://github.com/turnstream/turnstream" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/turnstream /usr/local/bin/turnstream
# distroless's nonroot user, by number so that runAsNonRoot can verify it.
USER 65532:65532
# --metrics-addr (/metrics, /healthz, /readyz) in the shipped manifests.
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/turnstream"]
CMD ["help"]
