#!/usr/bin/env bash
# Gathers what scripts/gpu-check.sh needs on a GPU machine into one folder,
# build/gpu-bundle (under the 64 MiB a device call carries): this build's
# binaries, stripped, and the Debian runtime libraries they load (gRPC,
# protobuf, spdlog, ...) that such a machine lacks. LibTorch, CUDA and NCCL
# are not carried: the machine's own torch 2.11.0+cu130 serves them.
#
#   ./scripts/gpu-bundle.sh     then, on the GPU machine, from the tree:
#   ./scripts/gpu-check.sh build/gpu-bundle "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_all

# The tests and the bench, in the test command's build folder.
mkdir -p "$BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" -DACCUMULUS_PYTHON="$PYTHON" -DACCUMULUS_BUILD_BENCH=ON > /dev/null
build ON

BUNDLE="$BUILD_DIR/gpu-bundle"
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
BINARIES=(accumulus accumulus-controller accumulus-worker accumulus-trainer
  accumulus_gpu_engine_tests accumulus_gpu_job_tests accumulus_gpu_bench)
for b in "${BINARIES[@]}"; do
  strip --strip-unneeded -o "$BUNDLE/bin/$b" "$BUILD_DIR/bin/$b"
done
# The whole-job test's certificates, made here: that machine may have no
# openssl (tests/support/test_cluster.h: ACCUMULUS_TEST_CERTS).
"$BUILD_DIR/bin/accumulus-make-dev-certs" "$BUNDLE/certs" > /dev/null

# Every library the binaries load, but those of glibc and the compiler's
# runtime (the machine's own are newer or the same ABI) and those that come
# with torch there (its lib/ and the nvidia-* wheels: CUDA, cuDNN, NCCL).
torch_root="$("$PYTHON" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
for b in "${BINARIES[@]}"; do
  ldd "$BUILD_DIR/bin/$b" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
  case "$lib" in
    "$torch_root"/*|/usr/local/cuda*) continue ;;
  esac
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*) continue ;;
    libstdc++.so*|libgcc_s.so*|libgomp.so*|libcuda.so*) continue ;;
  esac
  cp -L "$lib" "$BUNDLE/lib/"
done

# For gpu-check.sh's fallback, a build there from the tree against that
# machine's torch (ACCUMULUS_ENGINE_ONLY): googletest's source, gloo's
# headers and the decompressors' (zlib, libbz2, liblzma, libzstd; their
# libraries are among those above), the things beside LibTorch the engine
# and its GPU tests need.
mkdir -p "$BUNDLE/src" "$BUNDLE/include"
cp -r /usr/src/googletest "$BUNDLE/src/"
cp -r /usr/include/gloo /usr/include/lzma "$BUNDLE/include/"
cp /usr/include/zlib.h /usr/include/zconf.h /usr/include/bzlib.h /usr/include/lzma.h \
  /usr/include/zstd.h /usr/include/zstd_errors.h "$BUNDLE/include/"
for lib in libz.so.1 libbz2.so.1.0 liblzma.so.5 libzstd.so.1; do
  [ -f "$BUNDLE/lib/$lib" ] ||
    cp -L "$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64/ { print $NF; exit }')" "$BUNDLE/lib/"
done

# The newest glibc symbol version the binaries need: the GPU machine's glibc
# must be at least this (else gpu-check.sh falls back to building there).
newest_glibc="$(for b in "$BUNDLE"/bin/* "$BUNDLE"/lib/*; do objdump -T "$b"; done 2> /dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
echo "$newest_glibc" > "$BUNDLE/glibc-needed"
size="$(du -sm "$BUNDLE" | cut -f1)"
echo "== $BUNDLE: ${size} MiB, $(ls "$BUNDLE/lib" | wc -l) libraries, needs $newest_glibc"
[ "$size" -lt 60 ] || { echo "error: the bundle is over 60 MiB" >&2; exit 1; }
