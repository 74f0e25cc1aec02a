# syntax=docker/dockerfile:1
# One image with webhook, worker and queenctl: static binaries on Alpine, with git for the
# export push. Build: docker build --build-arg COMMIT=$(git rev-parse HEAD) -t queen-app .
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
# VERSION is the release (internal/version.Version, the chart's appVersion).
ARG VERSION=0.2.0
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath -o /out/ \
      -ldflags "-s -w -X github.com/queen-app/queen-app/internal/version.Version=${VERSION} -X github.com/queen-app/queen-app/internal/version.Commit=${COMMIT}" \
      ./cmd/webhook ./cmd/worker ./cmd/queenctl

FROM alpine:3.22 AS runtime
RUN apk add --no-cache ca-certificates git \
 && addgroup -S -g 10001 queen \
 && adduser -S -D -H -u 10001 -G queen -h /var/cache/queen-app queen \
 && install -d -o 10001 -g 10001 /var/cache/queen-app
COPY --from=build /out/webhook /out/worker /out/queenctl /usr/local/bin/
USER 10001:10001
ENV QUEEN_WORKER_CACHE_DIR=/var/cache/queen-app
# 8080 webhook receiver, 8081 claims API and webhook metrics, 8082 worker metrics.
EXPOSE 8080 8081 8082
CMD ["webhook"]
