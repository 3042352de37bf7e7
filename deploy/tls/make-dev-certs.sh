#!/usr/bin/env bash
# Makes a development CA and the certificates an accumulus cluster needs, with
# openssl: DIR/ca.pem (the CA: clients' --ca-file, workers' --tls-ca, the
# controller's --worker-ca), DIR/controller.pem + controller-key.pem (the
# controller's --tls-cert/--tls-key; valid for localhost, 127.0.0.1, ::1 and
# each NAME given) and DIR/worker.pem + worker-key.pem (the workers' client
# certificate). EC P-256 keys, 825 days. Files already there are kept, so a
# second run changes nothing; delete DIR to start over.
#
#   make-dev-certs.sh DIR [NAME...]   e.g. accumulus-controller.accumulus.svc
#
# For development and tests: a production cluster's certificates come from
# its own CA (cert-manager, Vault, ...), in the same roles.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [NAME...]" >&2
  exit 2
fi
dir="$1"
shift
mkdir -p "$dir"
umask 077

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [ ! -f "$dir/ca.pem" ]; then
  key "$dir/ca-key.pem"
  openssl req -x509 -new -key "$dir/ca-key.pem" -sha256 -days 825 -subj "/CN=accumulus dev CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$dir/ca.pem"
fi

# leaf NAME CN EXTENSIONS: NAME.pem and NAME-key.pem, signed by the CA.
leaf() {
  local name="$1" cn="$2" extensions="$3"
  [ -f "$dir/$name.pem" ] && return
  key "$dir/$name-key.pem"
  openssl req -new -key "$dir/$name-key.pem" -subj "/CN=$cn" -out "$dir/$name.csr"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" \
    -CAcreateserial -sha256 -days 825 -extfile <(printf '%s\n' "$extensions") \
    -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr"
}

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for name in "$@"; do
  if [[ "$name" =~ ^[0-9.]+$ ]]; then san="$san,IP:$name"; else san="$san,DNS:$name"; fi
done
leaf controller "accumulus-controller" \
  "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san"
leaf worker "accumulus-worker" \
  "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
# Readable by the processes that use them (the keys stay the owner's).
chmod 644 "$dir/ca.pem" "$dir/controller.pem" "$dir/worker.pem"
echo "certificates in $dir"
