# syntax=docker/dockerfile:1
# The flag-sidecar image (docs/operations.md). Build:
#
#   docker build --build-arg VERSION="$(git describe --tags --always)" --build-arg COMMIT="$(git rev-parse HEAD)" \
#     -t flag-sidecar .
#
# Try it offline, zero configuration (the example snapshot and keys of config/ ship in the image):
#
#   docker run --rm -p 8010:8010 -p 8011:8011 -e FLAG_SIDECAR_LISTEN=0.0.0.0:8010 flag-sidecar
#
# Runtime: distroless Node.js on Debian 13 — no shell, no package manager, nothing but node and the app; the build
# stage is Debian 13 (trixie) too, so the same glibc. The process runs as 10001:10001, reads its code from
# root-owned files, and writes only to FLAG_SIDECAR_SNAPSHOT_DIR (a volume), so a read-only root filesystem works.
# Node is PID 1 and handles SIGTERM/SIGINT itself (graceful drain, exit 0); it starts no child processes.
#
# Base images: Node 26, the Active LTS line (since October 2026), in both stages, each pinned by the digest of its
# multi-arch index, so a build pulls exactly these bytes whatever the tags point to later. CI runs the test suite
# on the build image's Node release too (.ci/node-lts). To update: Renovate (renovate.json) proposes new digests
# and Node releases for both lines and the CI Node together; by hand, `docker buildx imagetools inspect IMAGE:TAG`
# gives the index digest. Keep both stages on the same Node major and Debian release (test/unit/dockerfile.test.ts
# checks both) — docs/operations.md#the-image.

# ---- build: every dependency from the lock file, type check, esbuild bundle to dist/, drop the dev dependencies ----
FROM node:26.10.0-trixie-slim@sha256:ec7758ee051e457b468b32bde57b0879010b325bb9862718e9615225ce4aaae1 AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/warm-compile-cache.mjs ./scripts/
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && mkdir -p /staging/snapshots

# ---- runtime ------------------------------------------------------------------------------------------------------
# The distroless `nonroot` variant; its own user (65532) gives way to the numeric one set below.
FROM gcr.io/distroless/nodejs26-debian13:nonroot@sha256:afc6657a4b662f9cb69ca892b0596e55d6ef81a10e83ee8887b13f602877df89 AS runtime
# Shown by /status (version, commit), `--version` and the flag_sidecar_build_info metric. An empty VERSION falls
# back to package.json's version, an empty COMMIT to "unknown".
ARG VERSION=
ARG COMMIT=
LABEL org.opencontainers.image.title="flag-sidecar" \
      org.opencontainers.image.description="Feature-flag sidecar: serves PostHog flag definitions from memory" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
WORKDIR /app
# Code and dependencies stay root-owned and read-only to the process.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/warm-compile-cache.mjs ./scripts/warm-compile-cache.mjs
# The offline defaults (FLAG_SIDECAR_BOOTSTRAP_FILE / FLAG_SIDECAR_KEYS_FILE unset and no upstream): 9 KB that make
# `docker run` answer with example flags. Unused as soon as FLAG_SIDECAR_UPSTREAM_URL (or both files) is set.
COPY config/snapshot.example.json config/keys.example.json ./config/
# The snapshot directory, empty and owned by the process's user, so a Docker volume created from it is writable.
COPY --from=build --chown=10001:10001 /staging/snapshots /var/lib/flag-sidecar
# NODE_OPTIONS: V8's young generation capped at 4 MiB semi-spaces (V8 alone: up to 16): under saturating load RSS
# stays at ~77 MiB instead of ~93, at the same throughput (docs/operations.md#sizing). Setting NODE_OPTIONS at
# deploy time replaces this value: keep --max-semi-space-size=4 in it (e.g. beside --max-old-space-size).
# NODE_COMPILE_CACHE: V8's code cache for dist/ (and undici), filled below, read at every start and never written
# (READONLY): a start reads the code V8 compiled for dist/'s modules instead of compiling them from source
# (docs/operations.md#the-image).
# MALLOC_MMAP_THRESHOLD_: glibc's threshold fixed at its default 128 KiB. Left dynamic, it rises to the size of a
# freed large buffer (a 19 MB capture body), and the next ones come from malloc's heaps, which keep their freed
# pages: 16 SDKs sending a 19 MB batch at once peaked at 191-247 MiB RSS; fixed, every buffer from 128 KiB up is
# its own mapping, returned to the kernel when freed: 168-177 MiB (docs/reliability.md, capture memory).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-semi-space-size=4" \
    MALLOC_MMAP_THRESHOLD_=131072 \
    NODE_COMPILE_CACHE=/app/.node-compile-cache \
    NODE_COMPILE_CACHE_READONLY=1 \
    FLAG_SIDECAR_BUILD_VERSION="${VERSION}" \
    FLAG_SIDECAR_BUILD_COMMIT="${COMMIT}" \
    FLAG_SIDECAR_SNAPSHOT_DIR=/var/lib/flag-sidecar
VOLUME ["/var/lib/flag-sidecar"]
# The compile cache, warmed by this image's own node with the NODE_OPTIONS above: two starts (offline, and online
# with upstream unreachable) up to ready, then stopped. Node keeps one cache per uid, so the starts run as the
# process's user (10001, below and the Helm chart's runAsUser); the cache is left root-owned and world-readable.
# Run as root (the distroless `nonroot` base's user is 65532) to hand the directory over and back.
USER 0:0
RUN ["/nodejs/bin/node", "scripts/warm-compile-cache.mjs", "--as", "10001:10001", "/app/.node-compile-cache"]
USER 10001:10001
# 8010: API (binds 127.0.0.1 unless FLAG_SIDECAR_LISTEN says otherwise); 8011: /healthz /readyz /metrics /status.
EXPOSE 8010 8011
# `flag-sidecar health` asks the ops listener's /readyz (FLAG_SIDECAR_OPS_LISTEN), giving up after its own 3 s,
# inside Docker's 5 s: healthy once every project has a snapshot. Kubernetes ignores this; its probes use HTTP.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["/nodejs/bin/node", "dist/main.js", "health"]
ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]
CMD ["serve"]
