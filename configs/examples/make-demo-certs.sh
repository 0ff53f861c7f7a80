#!/usr/bin/env bash
# make-demo-certs.sh DIR — demo certificates for the example in DIR, to try it on a laptop.
#
# Reads DIR/flexway.yaml and its contract, and writes into DIR/tls/:
#   ca.crt             a demo certificate authority (its key is thrown away)
#   tls.crt, tls.key   the listener's certificate: *.<cluster>.<sni_domain> and
#                      bootstrap.<cluster>.<sni_domain> for every cluster of the contract
#   <id>.crt, <id>.key a client certificate for each auth.mtls.clients entry, with its subject
# A folder without a TLS listener needs nothing: the script says so and exits 0.
#
# DEMO ONLY: a CA made here is trusted by nobody but the clients you point at ca.crt;
# in production the certificates come from your PKI (cert-manager, a corporate CA).
# Never commit DIR/tls/ (configs/examples/.gitignore keeps it out).
set -euo pipefail

usage() { echo "usage: $0 DIR (an example folder holding flexway.yaml)" >&2; exit 2; }
[ $# -eq 1 ] || usage
dir=$1
cfg=$dir/flexway.yaml
[ -f "$cfg" ] || { echo "make-demo-certs: $cfg: no such file" >&2; exit 1; }
command -v openssl >/dev/null || { echo "make-demo-certs: openssl is not installed" >&2; exit 1; }

# The TLS listener's keys, as the examples write them (one key per line, comments after #).
if ! grep -Eq '^[[:space:]]+tls:' "$cfg"; then
  echo "make-demo-certs: $cfg declares no TLS listener: no certificate needed"
  exit 0
fi
value() { sed -nE "s/^[[:space:]]+$1:[[:space:]]*\"?([^\"#[:space:]]+)\"?.*/\1/p" "$cfg" | head -n 1; }
domain=$(value sni_domain)
[ -n "$domain" ] || { echo "make-demo-certs: $cfg: listeners.kafka.sni_domain not found" >&2; exit 1; }
contract=$(value asyncapi)
case $contract in /*) ;; *) contract=$dir/$contract ;; esac
[ -f "$contract" ] || { echo "make-demo-certs: the contract $contract: no such file" >&2; exit 1; }
clusters=$(grep -oE 'cluster:[[:space:]]*[a-z0-9-]+' "$contract" | sed -E 's/cluster:[[:space:]]*//' | sort -u)
[ -n "$clusters" ] || { echo "make-demo-certs: $contract serves no cluster (x-flexway-kafka-proxy)" >&2; exit 1; }

out=$dir/tls
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077
days=90
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)

openssl req -x509 "${ec[@]}" -keyout "$work/ca.key" -out "$out/ca.crt" -days "$days" \
  -subj "/CN=flexway demo CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

# sign NAME SUBJECT EXTENSIONS: a leaf certificate signed by the demo CA.
sign() {
  openssl req -new "${ec[@]}" -keyout "$out/$1.key" -out "$work/$1.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" > "$work/$1.ext"
  openssl x509 -req -in "$work/$1.csr" -CA "$out/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -CAserial "$work/ca.srl" -days "$days" -extfile "$work/$1.ext" -out "$out/$1.crt" 2>/dev/null
}

sans=""
for c in $clusters; do
  sans="$sans${sans:+,}DNS:*.$c.$domain,DNS:bootstrap.$c.$domain"
done
sign tls "/CN=flexway kafka listener" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans"
echo "make-demo-certs: $out/tls.crt covers ${sans//DNS:/}"

# auth.mtls.clients: "{ id: billing, subject: \"CN=billing-app\", ... }", or id: and
# subject: on lines of their own. A subject "CN=a,O=b" (as Go prints it, most specific
# first) is "/O=b/CN=a" for openssl.
awk '
  /^[[:space:]]*(-[[:space:]]*)?\{?[[:space:]]*id:/ { match($0, /id:[[:space:]]*"?[A-Za-z0-9._-]+/); s = substr($0, RSTART, RLENGTH); sub(/id:[[:space:]]*"?/, "", s); id = s }
  /subject:/ { match($0, /subject:[[:space:]]*"[^"]+"/); s = substr($0, RSTART, RLENGTH); sub(/subject:[[:space:]]*"/, "", s); sub(/"$/, "", s); if (id != "") print id "\t" s; id = "" }
' "$cfg" | while IFS=$'\t' read -r id subject; do
  subj=""
  IFS=',' read -ra parts <<<"$subject"
  for p in "${parts[@]}"; do subj="/${p# }$subj"; done
  sign "$id" "$subj" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
  echo "make-demo-certs: $out/$id.crt is the client $id ($subject)"
done
echo "make-demo-certs: clients trust $out/ca.crt"
