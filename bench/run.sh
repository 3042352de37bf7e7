#!/usr/bin/env bash
# Builds and runs the benchmarks; writes JSON and a Markdown summary to
# bench/results/ with the machine, commit, threads and date.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
install_all
BUILD_DIR="${ACCUMULUS_BENCH_BUILD_DIR:-$ROOT/build-bench}"
mkdir -p "$BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DACCUMULUS_BUILD_TESTS=OFF \
  -DACCUMULUS_BUILD_BENCH=ON -DACCUMULUS_PYTHON="$PYTHON" > "$BUILD_DIR/configure.log"
cmake --build "$BUILD_DIR" -j2 --target accumulus_engine_bench accumulus_streaming_bench \
  accumulus_token_file_bench accumulus \
  accumulus-controller accumulus-worker accumulus-trainer

# The trainer's allocator settings (worker/trainer_supervisor.cc): freed
# memory stays in the process instead of being faulted in again each window.
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296

RESULTS="$ROOT/bench/results"
mkdir -p "$RESULTS"
stamp="$(date -u +%Y-%m-%dT%H%M%SZ)"
json="$RESULTS/engine-split-$stamp.json"
# Repetitions of all benchmarks interleaved at random, so drift on a shared
# machine spreads over all of them instead of favouring whichever ran first.
"$BUILD_DIR/bin/accumulus_engine_bench" --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out="$json" --benchmark_out_format=json
"$PYTHON" "$ROOT/bench/split_report.py" "$json" "$(git -C "$ROOT" rev-parse --short HEAD)" \
  > "$RESULTS/engine-split-$stamp.md"
cat "$RESULTS/engine-split-$stamp.md"
# What measuring the gradient noise scale costs per window (target < 1%).
# (It exits 1 when the target is missed: recorded, and the other benches
# still run.)
"$PYTHON" "$ROOT/bench/noise_report.py" "$json" "$(git -C "$ROOT" rev-parse --short HEAD)" \
  > "$RESULTS/noise-overhead-$stamp.md" || echo "noise scale: overhead target missed"
cat "$RESULTS/noise-overhead-$stamp.md"

# Against the peers (Python and plain LibTorch loops, whole jobs through a
# worker): ratios in one run.
"$PYTHON" "$ROOT/bench/compare.py" "$json" "$BUILD_DIR/bin" "$(git -C "$ROOT" rev-parse --short HEAD)" \
  "$RESULTS/peers-$stamp"
cat "$RESULTS/peers-$stamp.md"

# A token file mapped: open time, memory kept, a micro-batch's cost.
"$BUILD_DIR/bin/accumulus_token_file_bench" --benchmark_out="$RESULTS/token-file-$stamp.json" \
  --benchmark_out_format=json

# Controller streaming against a bare gRPC echo.
"$BUILD_DIR/bin/accumulus_streaming_bench" "$RESULTS/streaming-$stamp.json" > /dev/null
"$PYTHON" "$ROOT/bench/streaming_report.py" "$RESULTS/streaming-$stamp.json" \
  "$(git -C "$ROOT" rev-parse --short HEAD)" > "$RESULTS/streaming-$stamp.md"
cat "$RESULTS/streaming-$stamp.md"

# Workers re-registering after a controller restart (bound: 3 s).
"$PYTHON" "$ROOT/bench/reregister.py" --build "$BUILD_DIR"

# The controller under load: 1,000 watchers, 5,000 jobs (the test's bounds
# hold; its figures are kept).
ACCUMULUS_LOAD_RESULTS="$RESULTS/load-$stamp.md" "$BUILD_DIR/bin/accumulus_load_tests" > /dev/null
cat "$RESULTS/load-$stamp.md"
