#!/usr/bin/env bash
# Builds and runs the benchmarks; writes JSON and a Markdown summary to
# bench/results/ with the machine, commit, threads and date.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
install_packages
BUILD_DIR="${ACCUMULUS_BENCH_BUILD_DIR:-$ROOT/build-bench}"
mkdir -p "$BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DACCUMULUS_BUILD_TESTS=OFF \
  -DACCUMULUS_BUILD_BENCH=ON > "$BUILD_DIR/configure.log"
cmake --build "$BUILD_DIR" -j2 --target accumulus_engine_bench

RESULTS="$ROOT/bench/results"
mkdir -p "$RESULTS"
stamp="$(date -u +%Y-%m-%dT%H%M%SZ)"
json="$RESULTS/engine-split-$stamp.json"
"$BUILD_DIR/bin/accumulus_engine_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out="$json" --benchmark_out_format=json
{
  echo "# Engine: one window of global batch 256, mlp 784-1024-1024-10, SGD momentum"
  echo
  echo "- date: $stamp"
  echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD)"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo
  echo "| micro × accumulation | samples/s (median) | window peak tensor bytes |"
  echo "| --- | --- | --- |"
  grep -E '"(name|items_per_second|window_peak_bytes|accumulation)"' "$json" |
    paste - - - - | grep median |
    sed -E 's/.*micro:([0-9]+)[^,]*,.*"accumulation": ([0-9.e+]+),.*"items_per_second": ([0-9.e+]+),.*"window_peak_bytes": ([0-9.e+]+).*/\1 \2 \3 \4/' |
    awk '{printf "| %d × %d | %.0f | %.1f MiB |\n", $1, $2, $3, $4 / 1048576}'
} > "$RESULTS/engine-split-$stamp.md"
cat "$RESULTS/engine-split-$stamp.md"
