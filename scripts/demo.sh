#!/usr/bin/env bash
# Installs what accumulus needs, builds it, starts a local controller and
# worker (`accumulus up`), submits an accumulating training job and streams
# its metrics until it finishes. Safe to run again.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_all
build OFF

BIN="$BUILD_DIR/bin"
DATA_DIR="${ACCUMULUS_DATA_DIR:-$ROOT/accumulus-data}"
JOB="${1:-$ROOT/examples/jobs/mlp-accumulate.yaml}"

# TLS with development certificates, and an admin token; made here first
# (`up` keeps them) so the CLI below can trust the controller, and be
# trusted, from its first call.
"$BIN/accumulus-make-dev-certs" "$DATA_DIR/tls" > /dev/null
export ACCUMULUS_CA_FILE="$DATA_DIR/tls/ca.pem"
export ACCUMULUS_TOKEN_FILE="$DATA_DIR/admin.token"
[ -f "$ACCUMULUS_TOKEN_FILE" ] ||
  "$BIN/accumulus" tokens add admin admin --file "$DATA_DIR/tokens" --out "$ACCUMULUS_TOKEN_FILE"

"$BIN/accumulus" up --data-dir "$DATA_DIR" &
UP_PID=$!
trap 'kill -INT $UP_PID 2>/dev/null; wait $UP_PID 2>/dev/null || true' EXIT

# The CLI waits (up to --timeout) for the controller to come up.
"$BIN/accumulus" submit "$JOB" --watch
echo
"$BIN/accumulus" list
echo "== metrics were served at http://127.0.0.1:7601/metrics; logs are in $DATA_DIR"
