#!/bin/sh
# Regenerates the test PKI of tests/unit/agent/api/test-http-server.c: a CA,
# a server certificate for 127.0.0.1, a client certificate the CA signed, and
# a client certificate of another CA (refused). Valid for 100 years.
set -eu
cd "$(dirname "$0")"
days=36500
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
        key "$1-key.pem"
        openssl req -x509 -new -key "$1-key.pem" -days $days -subj "/CN=$2" -out "$1.pem"
}
leaf() { # name cn ca ext
        key "$1-key.pem"
        openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr"
        printf '%s\n' "$4" >"$1.ext"
        openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3-key.pem" -CAcreateserial -days $days \
                -extfile "$1.ext" -out "$1.pem" 2>/dev/null
        rm -f "$1.csr" "$1.ext"
}
ca ca "cubelet test CA"
ca rogue-ca "another CA"
leaf server 127.0.0.1 ca "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client "system:node-scraper" ca "extendedKeyUsage=clientAuth"
leaf rogue-client "system:node-scraper" rogue-ca "extendedKeyUsage=clientAuth"
rm -f ./*.srl rogue-ca-key.pem ca-key.pem
