#!/usr/bin/env bash
# Runs on a GPU machine (the device tool's: NVIDIA H200, torch 2.11.0+cu130 in
# its Python, no package registry), from the tree, in about 5 minutes:
#   1. every GPU test (tests/gpu: gradient equivalence, bf16/fp16 with a real
#      overflow, window peak, CUDA out-of-memory recovery, the device probe,
#      NCCL where two GPUs exist, a whole job controller → worker → trainer);
#   2. the bench's GPU part: samples/s and peak CUDA memory of mlp, cnn and
#      charlm at global batch 256 split 256×1 … 4×64, fp32 and bf16, for the
#      engine and for the Python textbook loop on the same GPU and torch;
#   3. what measuring the gradient noise scale costs on the GPU
#      (accumulus_gpu_bench --noise-cost).
# Results go to OUT (summary.txt first); bench/gpu_report.py's Markdown is
# what bench/results/ keeps. ACCUMULUS_GPU_TEST_TIMEOUT bounds each test (150 s).
# ACCUMULUS_GPU_PARTS picks parts (default
# "tests throughput noise"), e.g. "tests noise" for a short second call.
#
#   ./scripts/gpu-check.sh [BUNDLE] [OUT]
# BUNDLE: what scripts/gpu-bundle.sh gathered here (default build/gpu-bundle):
# binaries that run on the machine's own LibTorch, the same 2.11.0 they were
# built against. Where they cannot load (or with ACCUMULUS_GPU_BUILD_THERE=1)
# the engine, its GPU tests and the GPU bench are built there from the tree
# against that torch instead (ACCUMULUS_ENGINE_ONLY; the whole-job test needs
# the bundle's controller and worker, and is left out then).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="$(cd "${1:-$ROOT/build/gpu-bundle}" && pwd)"
OUT="${2:-${OUT:-$ROOT/gpu-results}}"
mkdir -p "$OUT"
PYTHON="${ACCUMULUS_GPU_PYTHON:-$(command -v python3)}"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

site="$("$PYTHON" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')" || {
  log "no torch in $PYTHON"
  exit 1
}
nvidia_libs="$(ls -d "$site"/nvidia/*/lib 2> /dev/null | paste -sd:)"
export LD_LIBRARY_PATH="$BUNDLE/lib:$site/torch/lib:$nvidia_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

{
  nvidia-smi
  "$PYTHON" -c 'import torch; n = torch.cuda.device_count(); print("torch", torch.__version__,
    "cuda", torch.version.cuda, "devices", n, torch.cuda.get_device_name(0) if n else "")'
  ldd --version | head -1
  echo "bundle needs $(cat "$BUNDLE/glibc-needed" 2> /dev/null)"
  echo "nproc $(nproc)"
} > "$OUT/environment.txt" 2>&1
log "$(grep -m1 '^torch' "$OUT/environment.txt")"

# The bundle's binaries, or a build here.
BIN="$BUNDLE/bin"
missing="$(for b in "$BIN"/*; do ldd "$b"; done 2>&1 | grep -E 'not found' | sort -u)"
if [ -n "$missing" ] || [ "${ACCUMULUS_GPU_BUILD_THERE:-0}" = 1 ]; then
  [ -n "$missing" ] && { log "the bundle cannot run here:"; echo "$missing" | tee -a "$OUT/summary.txt"; }
  log "building the engine, its GPU tests and the GPU bench here"
  start=$(date +%s)
  generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  if ! { cmake -S "$ROOT" -B "$ROOT/build-gpu" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DACCUMULUS_ENGINE_ONLY=ON -DACCUMULUS_PYTHON="$PYTHON" \
    -DACCUMULUS_GTEST_SOURCE_DIR="$BUNDLE/src/googletest" \
    -DACCUMULUS_GLOO_INCLUDE_DIR="$BUNDLE/include" \
    -DZLIB_INCLUDE_DIR="$BUNDLE/include" -DZLIB_LIBRARY="$BUNDLE/lib/libz.so.1" \
    -DBZIP2_INCLUDE_DIR="$BUNDLE/include" -DBZIP2_LIBRARY="$BUNDLE/lib/libbz2.so.1.0" \
    -DLZMA_INCLUDE_DIR="$BUNDLE/include" -DLZMA_LIBRARY="$BUNDLE/lib/liblzma.so.5" \
    -DZSTD_INCLUDE_DIR="$BUNDLE/include" -DZSTD_LIBRARY="$BUNDLE/lib/libzstd.so.1" &&
    cmake --build "$ROOT/build-gpu" -j"$(nproc)"; } > "$OUT/build-there.log" 2>&1; then
    log "the build here failed: $(grep -m3 -E 'error|Error' "$OUT/build-there.log" | paste -sd' ')"
    exit 4
  fi
  BIN="$ROOT/build-gpu/bin"
  log "built here in $(($(date +%s) - start)) s"
fi
export ACCUMULUS_BINARY_DIR="$BIN"
export ACCUMULUS_TEST_CERTS="$BUNDLE/certs"
[ -x "$BIN/accumulus-trainer" ] &&
  log "probe: $("$BIN/accumulus-trainer" --probe-devices 2>&1 | head -4 | paste -sd';')"

PARTS="${ACCUMULUS_GPU_PARTS:-tests throughput noise}"
part() { [[ " $PARTS " == *" $1 "* ]]; }

# 1. The GPU tests, one process each (as ctest runs them), so one test's
# allocator settings or a crash cannot leak into the next.
: > "$OUT/gpu-tests.log"
passed=0 failed=0 skipped=0
part tests && for binary in "$BIN"/accumulus_gpu_engine_tests "$BIN"/accumulus_gpu_job_tests; do
  [ -x "$binary" ] || continue
  for t in $("$binary" --gtest_list_tests | awk '/^[^ ]/ { s = $1 } /^  / { print s $1 }'); do
    start=$(date +%s)
    timeout "${ACCUMULUS_GPU_TEST_TIMEOUT:-150}" "$binary" --gtest_filter="$t" > "$OUT/one-test.log" 2>&1
    rc=$?
    cat "$OUT/one-test.log" >> "$OUT/gpu-tests.log"
    if grep -q "\[  SKIPPED \] $t" "$OUT/one-test.log"; then
      verdict=skipped skipped=$((skipped + 1))
    elif [ $rc -eq 0 ]; then
      verdict=passed passed=$((passed + 1))
    else
      verdict="FAILED (rc $rc)" failed=$((failed + 1))
    fi
    log "$t: $verdict ($(($(date +%s) - start)) s)"
  done
done
rm -f "$OUT/one-test.log"
log "gpu tests: $passed passed, $skipped skipped, $failed failed"

# 2. The bench's GPU part: the engine, then the Python loop on each split.
: > "$OUT/gpu-bench.jsonl"
: > "$OUT/gpu-python.jsonl"
: > "$OUT/gpu-noise.jsonl"
part throughput && timeout 300 "$BIN/accumulus_gpu_bench" 20 > "$OUT/gpu-bench.jsonl" 2> "$OUT/gpu-bench.log"
log "engine bench: $(wc -l < "$OUT/gpu-bench.jsonl") configurations"
part throughput && for model in mlp cnn charlm; do
  for precision in fp32 bf16; do
    for micro in 256 64 16 4; do
      timeout 60 "$PYTHON" "$ROOT/bench/peers/textbook_loop.py" "$model" "$micro" --device cuda \
        --precision "$precision" --windows 20 >> "$OUT/gpu-python.jsonl" 2>> "$OUT/gpu-bench.log"
    done
  done
done
log "python peer: $(wc -l < "$OUT/gpu-python.jsonl") configurations"
# 3. The noise scale's cost: 10 windows a run, with and without in turn.
part noise && timeout 240 "$BIN/accumulus_gpu_bench" --noise-cost 10 > "$OUT/gpu-noise.jsonl" \
  2>> "$OUT/gpu-bench.log"
log "noise cost: $(wc -l < "$OUT/gpu-noise.jsonl") configurations"
"$PYTHON" "$ROOT/bench/gpu_report.py" "$OUT/gpu-bench.jsonl" "$OUT/gpu-python.jsonl" \
  "$OUT/gpu-noise.jsonl" > "$OUT/gpu-bench.md" 2>> "$OUT/gpu-bench.log" &&
  cat "$OUT/gpu-bench.md" >> "$OUT/summary.txt"
[ "$failed" -eq 0 ]
