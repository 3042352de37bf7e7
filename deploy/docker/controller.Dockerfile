# The controller and the CLI: no LibTorch, no CUDA; builds in minutes.
#   docker build -f deploy/docker/controller.Dockerfile --build-arg VERSION=0.1.0 \
#     -t accumulus-controller:0.1.0 .
FROM debian:12 AS build
COPY scripts/common.sh /src/scripts/common.sh
RUN bash -c 'export ACCUMULUS_BUILD_ENGINE=OFF && source /src/scripts/common.sh && install_packages'
COPY . /src
RUN bash -c 'export ACCUMULUS_BUILD_ENGINE=OFF && source /src/scripts/common.sh && BUILD_DIR=/build build OFF' \
    && strip /build/bin/accumulus-controller /build/bin/accumulus

# The runtime: the shared libraries the binaries load, sqlite3 for online
# backups of the state (docs/deploy.md), nothing to build with.
FROM debian:12-slim
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="accumulus-controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.description="accumulus controller: gradient-accumulation jobs over gRPC"
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends libgrpc++1.51 libprotobuf32 libspdlog1.10 libyaml-cpp0.7 \
      libcpp-httplib0.11 libsqlite3-0 libssl3 sqlite3 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/accumulus-controller /build/bin/accumulus /usr/local/bin/
# A numeric user, so that runAsNonRoot can verify it.
USER 10001:10001
EXPOSE 7600 7601 7602
ENTRYPOINT ["/usr/local/bin/accumulus-controller"]
