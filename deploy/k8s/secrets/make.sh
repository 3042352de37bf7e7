#!/usr/bin/env bash
# Fills deploy/k8s/secrets/files/ for `kubectl apply -k deploy/k8s/secrets`:
# a development CA with the controller's certificate (valid for the
# controller's Service names) and the workers' client certificate, and one
# admin token, printed once (its hash goes into files/tokens). Files already
# there are kept; delete files/ to start over.
#
#   make.sh [NAMESPACE]      (default: accumulus)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
namespace="${1:-accumulus}"
files="$here/files"
mkdir -p "$files"
"$here/../../tls/make-dev-certs.sh" "$files" accumulus-controller \
  "accumulus-controller.$namespace" "accumulus-controller.$namespace.svc" \
  "accumulus-controller.$namespace.svc.cluster.local"
rm -f "$files"/*.csr "$files"/*.srl
if [ ! -f "$files/tokens" ]; then
  umask 077
  token="acc_$(openssl rand -hex 32)"
  hash="$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
  printf 'admin admin sha256:%s\n' "$hash" > "$files/tokens"
  echo "admin token (keep it; only its hash is stored): $token"
  echo "  export ACCUMULUS_TOKEN=$token"
fi
echo "made $files; now: kubectl apply -k $here"
