# syntax=docker/dockerfile:1
# The flagsvc image: built in one stage, run from a slim one as an unprivileged user.
#
#   docker build -t flagsvc .
#   docker run -p 8080:8080 -e DATABASE_URL=postgres://... flagsvc            # serve (migrates first)
#   docker run -e DATABASE_URL=postgres://... flagsvc migrate                  # migrate and exit
#
# docker-compose.yml runs it with PostgreSQL, a migrate step and two replicas behind a proxy.
# Without DATABASE_URL it keeps SQLite in /data/flagsvc.db: mount a volume on /data to keep it.
# Both stages are Debian bookworm: the binary links bookworm's glibc and libpq.

FROM rust:1-bookworm AS build
# diesel's PostgreSQL backend links libpq; SQLite is compiled in (bundled).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpq-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The crates.io index, the downloaded crates and target/ live in BuildKit cache mounts: after a
# source change only the workspace's own crates are compiled again, not their dependencies. The
# binary is copied out of the cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p flagsvc \
 && install -m 0755 target/release/flagsvc /usr/local/bin/flagsvc

FROM debian:bookworm-slim AS runtime
# What the binary needs at run time (`ldd flagsvc`): libpq (which brings its own libraries);
# ca-certificates for TLS to PostgreSQL (`sslrootcert=/etc/ssl/certs/ca-certificates.crt`).
# Webhook deliveries carry their own root certificates.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libpq5 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 flagsvc \
 && useradd --system --uid 10001 --gid flagsvc --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin flagsvc \
 && install -d -o flagsvc -g flagsvc -m 0750 /data
COPY --from=build /usr/local/bin/flagsvc /usr/local/bin/flagsvc
LABEL org.opencontainers.image.title="flagsvc" \
      org.opencontainers.image.description="Feature-flag management REST API" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /data
# Numeric, so that a runtime can check it is not root (Kubernetes runAsNonRoot).
USER 10001:10001
ENV FLAGSVC_BIND=0.0.0.0:8080
EXPOSE 8080
# No HEALTHCHECK: the image also runs `migrate`, which exits, and it has no HTTP client. The
# probes are GET /healthz (alive) and GET /readyz (ready for traffic); docker-compose.yml asks
# /readyz through bash's /dev/tcp, and its proxy checks it too.
ENTRYPOINT ["flagsvc"]
CMD ["serve"]
