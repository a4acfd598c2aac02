# mlwarden's container image: one static binary (CGO_ENABLED=0) on
# distroless/static, run as the non-root user 65532.
#
#   docker build -t mlwarden:dev .            # from a checkout: compiles the source
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/mlwarden:TAG .
#
# Releases (.goreleaser.yaml, dockers_v2) build this same file with
# --build-arg BINARY=prebuilt: the binaries goreleaser compiled, one per
# platform under linux/<arch>/ in the build context, are copied instead of
# compiling again, so the image and the archives carry the same binary.
#
# Base images are pinned by digest (the pins check reports any that is not).
# The digests below are the ones published for these tags by sigstore's
# release Dockerfiles (rekor v1.5.3 and timestamp-authority v2.1.3 for
# golang:1.26.4, rekor-tiles v2.3.0's multi-platform build for
# static-debian13:nonroot); they were not pulled here. To move to a newer
# base: change the tag, delete "@sha256:...", and run
# `mlwarden pin Dockerfile`, which resolves the tag to its current digest
# and writes it back; `mlwarden scan Dockerfile` then must exit 0.
# TestDockerfile (deploy/dockerfile_test.go) parses this file with BuildKit's
# parser and fails on an unpinned FROM, a root user or missing labels.

# source (default) compiles in the build stage; prebuilt takes goreleaser's
# binary from the build context.
ARG BINARY=source

FROM --platform=$BUILDPLATFORM golang:1.26.4@sha256:f96cc555eb8db430159a3aa6797cd5bae561945b7b0fe7d0e284c63a3b291609 AS source
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=none
ARG DATE=unknown
# go.mod asks for Go 1.26.8; the golang image sets GOTOOLCHAIN=local, so
# let the go command fetch that toolchain from the module proxy (checked
# against the checksum database, as every module is).
ENV GOTOOLCHAIN=auto CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
        -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
        -o /out/mlwarden ./cmd/mlwarden

FROM scratch AS prebuilt
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/mlwarden /out/mlwarden

FROM ${BINARY} AS binary

FROM gcr.io/distroless/static-debian13:nonroot@sha256:963fa6c544fe5ce420f1f54fb88b6fb01479f054c8056d0f74cc2c6000df5240
ARG VERSION=dev
ARG COMMIT=none
LABEL org.opencontainers.image.title="mlwarden" \
      org.opencontainers.image.description="Scans ML supply chains: images, repositories, Slurm scripts and model files for secrets, unpinned dependencies, unsafe models, signatures, CUDA mismatches and risky settings" \
      org.opencontainers.image.source="https://github.com/mlwarden/mlwarden" \
      org.opencontainers.image.url="https://github.com/mlwarden/mlwarden" \
      org.opencontainers.image.documentation="https://github.com/mlwarden/mlwarden#readme" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="mlwarden" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian13:nonroot" \
      org.opencontainers.image.base.digest="sha256:963fa6c544fe5ce420f1f54fb88b6fb01479f054c8056d0f74cc2c6000df5240"
COPY --from=binary /out/mlwarden /usr/local/bin/mlwarden
# The per-layer cache goes under $XDG_CACHE_HOME; large files are spooled
# to $TMPDIR. Both are writable by 65532 in distroless (or are volumes, as
# in deploy/helm with a read-only root file system).
ENV XDG_CACHE_HOME=/home/nonroot/.cache TMPDIR=/tmp
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/mlwarden"]
CMD ["--help"]
