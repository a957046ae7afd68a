# Builds the flagsvc binary and runs it on a slim image (libpq for PostgreSQL; SQLite is bundled).
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libpq-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p flagsvc

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/flagsvc /usr/local/bin/flagsvc
WORKDIR /data
ENV FLAGSVC_BIND=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["flagsvc"]
