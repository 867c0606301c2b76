#!/bin/bash
# N nodes' client credentials for make bench-scale, from the control plane's
# CA (tests/cluster/certs.sh's PKI): DIR/PREFIX-I.kubeconfig for I in
# 0..N-1, each with a certificate CN system:node:PREFIX-I, O system:nodes (the
# Node authorizer and NodeRestriction see each hollow node as itself). One
# P-256 key serves them all: the certificates differ, and signing one takes
# milliseconds where a key pair each would double the time.
#
#   tests/cluster/scale/node-certs.sh PKI DIR PREFIX N [SERVER]
set -eu
P=$1 D=$2 PREFIX=$3 N=$4 SERVER=${5:-https://127.0.0.1:6443}
mkdir -p "$D"
umask 077
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$D/node.key" 2>/dev/null
echo "extendedKeyUsage=clientAuth" >"$D/ext"
ca=$(base64 -w0 "$P/ca.crt")
key=$(base64 -w0 "$D/node.key")
for i in $(seq 0 $((N - 1))); do
	name=$PREFIX-$i
	openssl req -new -key "$D/node.key" -subj "/O=system:nodes/CN=system:node:$name" 2>/dev/null |
		openssl x509 -req -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 30 \
			-extfile "$D/ext" -out "$D/$name.crt" 2>/dev/null
	cat >"$D/$name.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters:
- name: scale
  cluster: {server: $SERVER, certificate-authority-data: $ca}
users:
- name: system:node:$name
  user: {client-certificate-data: $(base64 -w0 "$D/$name.crt"), client-key-data: $key}
contexts:
- name: node
  context: {cluster: scale, user: "system:node:$name"}
current-context: node
K
	rm -f "$D/$name.crt"
done
rm -f "$D/ext"
