# The worker daemon and its trainer, on NVIDIA's CUDA 13 base with PyPI's
# torch 2.11 (LibTorch with CUDA and NCCL): one image for GPU and CPU nodes.
#   docker build -f deploy/docker/worker.Dockerfile --build-arg VERSION=0.1.0 \
#     -t accumulus-worker:0.1.0 .
FROM nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04 AS build
COPY scripts/common.sh /src/scripts/common.sh
ENV ACCUMULUS_TORCH_ENV=/opt/accumulus/torch
RUN bash -c 'source /src/scripts/common.sh && install_packages && install_torch'
COPY . /src
RUN bash -c 'source /src/scripts/common.sh && check_cuda_toolkit && BUILD_DIR=/build build OFF' \
    && strip /build/bin/accumulus-worker /build/bin/accumulus-trainer /build/bin/accumulus

# The runtime: CUDA's and cuDNN's runtime libraries and the shared libraries
# the binaries load; nothing to build with. The driver comes from the node (the NVIDIA
# container toolkit); on a CPU node none is needed.
FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="accumulus-worker" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.description="accumulus worker: runs gradient-accumulation jobs on GPUs or CPUs"
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends libgrpc++1.51t64 libprotobuf32t64 libspdlog1.12 libyaml-cpp0.8 \
      libcpp-httplib0.14 libssl3t64 \
    && rm -rf /var/lib/apt/lists/*
# The trainer's LibTorch (and the nvidia-* wheels it loads) at the path the
# binaries were linked against.
COPY --from=build /opt/accumulus/torch /opt/accumulus/torch
COPY --from=build /build/bin/accumulus-worker /build/bin/accumulus-trainer /build/bin/accumulus /usr/local/bin/
USER 10001:10001
EXPOSE 7610 29500
ENTRYPOINT ["/usr/local/bin/accumulus-worker"]
