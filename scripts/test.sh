#!/usr/bin/env bash
# Installs what accumulus needs, builds it with its tests, and runs the whole
# suite (unit, engine and end-to-end tests). Safe to run again.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_all
build ON
echo "== testing"
cd "$BUILD_DIR"
ctest -j2 --output-on-failure --timeout 600
