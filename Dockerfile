# syntax=docker/dockerfile:1
# One image with webhook, worker and queenctl: static binaries on Alpine, with git for the
# export push. Build: docker build --build-arg COMMIT=$(git rev-parse HEAD) -t queen-app .
# Base images are pinned by digest (docker-library/repo-info's for the tag); the digest wins
# over the tag, so change both together.
ARG GO_VERSION=1.26

# The build runs on the builder's platform and cross-compiles for the target's
# (docker buildx --platform linux/amd64,linux/arm64), never under emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-alpine@sha256:ce864e7223ac17b1775e6fd0b4c0db580c2eb50e7953a427916379e4b92a1628 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
# internal/api serves docs/openapi.yaml, embedded by package docs.
COPY docs/openapi.go docs/openapi.yaml ./docs/
# VERSION is the release (internal/version.Version, the chart's appVersion).
ARG VERSION=0.2.0
ARG COMMIT=
ARG TARGETOS
ARG TARGETARCH
# make build's line (TestDockerfileBuildsWhatMakeBuilds), for the target platform.
RUN GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    CGO_ENABLED=0 go build -trimpath -o /out/ \
      -ldflags "-s -w -X github.com/queen-app/queen-app/internal/version.Version=${VERSION} -X github.com/queen-app/queen-app/internal/version.Commit=${COMMIT}" \
      ./cmd/webhook ./cmd/worker ./cmd/queenctl

FROM alpine:3.22@sha256:365499d9dccb7c8cfaffef995a6c382e71174585e0556f6476ead1c5971c39fb AS runtime
ARG VERSION=0.2.0
ARG COMMIT=
# The release workflow's docker/metadata-action sets these too, from the tag.
LABEL org.opencontainers.image.title="queen-app" \
      org.opencontainers.image.description="The GitHub App that keeps the Queen's claims honest: webhook, worker and queenctl" \
      org.opencontainers.image.source="https://github.com/queen-app/queen-app" \
      org.opencontainers.image.url="https://github.com/queen-app/queen-app" \
      org.opencontainers.image.documentation="https://github.com/queen-app/queen-app#deploy" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
RUN apk add --no-cache ca-certificates git \
 && addgroup -S -g 10001 queen \
 && adduser -S -D -H -u 10001 -G queen -h /var/cache/queen-app queen \
 && install -d -o 10001 -g 10001 /var/cache/queen-app
COPY --from=build /out/webhook /out/worker /out/queenctl /usr/local/bin/
USER 10001:10001
ENV QUEEN_WORKER_CACHE_DIR=/var/cache/queen-app
# 8080 webhook receiver, 8081 claims API and webhook metrics, 8082 worker metrics.
EXPOSE 8080 8081 8082
# No HEALTHCHECK: one image runs two binaries with health on different ports
# (8081, 8082), and Kubernetes ignores HEALTHCHECK for its own probes
# (/healthz, /readyz); compose.yaml sets a healthcheck per service.
CMD ["webhook"]
