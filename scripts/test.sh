#!/usr/bin/env bash
# Installs what accumulus needs, builds it with its tests, and runs the whole
# suite (unit, engine and end-to-end tests) and the Python client's tests
# (pytest, against real processes); then the control plane again,
# built with clang's thread-safety analysis and ThreadSanitizer, and with
# AddressSanitizer + UndefinedBehaviorSanitizer; then the fuzz targets for a
# bounded time. Safe to run again.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_all
build ON
echo "== testing"
cd "$BUILD_DIR"
ctest -j2 --output-on-failure --timeout 600 | tee "$BUILD_DIR/ctest.log"
python_client_tests | tee "$BUILD_DIR/pytest.log"

# Each sanitizer stops a process at its first report (halt_on_error); a
# report in a child fails the test that started it (its exit code is
# checked when the test cluster stops it).
cd "$ROOT"
checked_build "$ROOT/build-tsan" "-fsanitize=thread"
# ThreadSanitizer: the unit tests (job manager, store writer, event log,
# metrics, the worker's link and trainer supervisor), and end to end the
# worker daemon (its link, lease keeper and trainer supervisor threads). Not
# the controller's gRPC callback reactors — end to end, or the watch stream's
# unit test: they hand every object over through Debian's uninstrumented
# gRPC core, so TSan reports each handover as a race (a reactor built in
# the method handler, its OnDone run on an executor thread: "data race on
# vptr"); they run under AddressSanitizer + UndefinedBehaviorSanitizer below.
# Reports TSan's interceptors see coming from uninstrumented libraries are
# ignored.
TSAN_E2E="$ROOT/build-tsan/e2e-bin"
mkdir -p "$TSAN_E2E"
ln -sf "$ROOT/build-tsan/bin/accumulus-worker" "$TSAN_E2E/accumulus-worker"
ln -sf "$BUILD_DIR/bin/accumulus-controller" "$TSAN_E2E/accumulus-controller"
ln -sf "$BUILD_DIR/bin/accumulus" "$TSAN_E2E/accumulus"
ln -sf "$BUILD_DIR/bin/accumulus-make-dev-certs" "$TSAN_E2E/accumulus-make-dev-certs"
TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" UNIT_FILTER="-WatchReactorTest.*" \
  run_checked "$ROOT/build-tsan" "$TSAN_E2E"
checked_build "$ROOT/build-asan" "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
ASAN_OPTIONS="halt_on_error=1 detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
  run_checked "$ROOT/build-asan" "$ROOT/build-asan/bin"
# The parsers of what users send or write, fuzzed for a bounded time.
fuzz_build "$ROOT/build-fuzz"
run_fuzzers "$ROOT/build-fuzz" "${FUZZ_SECONDS:-30}"

# Both suites' summaries last, where CI's log ends.
echo "== summary"
grep -E "tests passed|tests failed" "$BUILD_DIR/ctest.log"
grep -E "passed|failed" "$BUILD_DIR/pytest.log" | tail -1
