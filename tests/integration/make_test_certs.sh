#!/usr/bin/env bash
# Writes a throwaway PKI for the TLS tests into DIR (openssl, Debian package openssl):
#   ca.pem / ca.key             the test CA
#   server.pem / server.key     localhost + 127.0.0.1, signed by the CA (CN llmserve-test-server)
#   renewed.pem / renewed.key   the same names, a new key (CN llmserve-test-renewed): a renewal
#   client.pem / client.key     a client certificate signed by the CA (mutual TLS)
#   rogue-ca.pem, rogue.pem / rogue.key  a client certificate from another CA
# Usage: make_test_certs.sh DIR
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"
days=2
quiet() { "$@" >/dev/null 2>&1 || { echo "make_test_certs.sh: failed: $*" >&2; "$@"; exit 1; }; }

ca() {  # NAME CN
  quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days "$days" -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
leaf() {  # NAME CN CA EXT
  quiet openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf '%s\n' "$4" > "$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" -days "$days" \
    -extfile "$1.ext"
  rm -f "$1.csr" "$1.ext"
}

server_ext="subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
client_ext="extendedKeyUsage=clientAuth"
ca ca llmserve-test-ca
ca rogue-ca llmserve-rogue-ca
leaf server llmserve-test-server ca "$server_ext"
leaf renewed llmserve-test-renewed ca "$server_ext"
leaf client llmserve-test-client ca "$client_ext"
leaf rogue llmserve-rogue-client rogue-ca "$client_ext"
