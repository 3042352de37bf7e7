# Shared by the set-up scripts: the Debian packages accumulus needs, installed
# only when missing, and the build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ACCUMULUS_BUILD_DIR:-$ROOT/build}"

# Build tools, the libraries of PLATFORM.md, OpenBLAS (LibTorch's CPU speed
# depends on it: the default reference BLAS is ~20× slower), Prometheus
# (promtool checks our /metrics in the tests) and python3-torch (the same
# LibTorch from Python: the independent reference of the cross-check tests).
PACKAGES=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libtorch-dev libopenblas0-pthread libgloo-dev
  libspdlog-dev libcpp-httplib-dev libsqlite3-dev libcli11-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus python3-torch
)

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

build() {
  echo "== building in $BUILD_DIR"
  mkdir -p "$BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACCUMULUS_BUILD_TESTS="${1:-ON}" -DACCUMULUS_WERROR=ON > "$BUILD_DIR/configure.log" 2>&1 \
    || { cat "$BUILD_DIR/configure.log"; exit 1; }
  # Two jobs: every LibTorch translation unit needs ~1 GiB and ~15 s of a core.
  cmake --build "$BUILD_DIR" -j2
}
