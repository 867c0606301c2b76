#!/bin/bash
# The control plane's certificates for cubelet's cluster tests, made with
# openssl into DIR (default build/cluster/pki), and a kubeconfig per client:
#   ca.{crt,key}             the cluster's CA (clients and serving)
#   apiserver.{crt,key}      kube-apiserver's serving certificate for 127.0.0.1
#                            (and localhost, kubernetes.default.svc, 10.0.0.1)
#   node.{crt,key}           the node's client certificate: CN system:node:NODE,
#                            O system:nodes (the Node authorizer, NodeRestriction)
#   admin.{crt,key}          O system:masters (the tests' kubectl)
#   controller-manager.*, scheduler.*   CN system:kube-controller-manager,
#                            system:kube-scheduler (their RBAC roles)
#   apiserver-kubelet-client.*  O system:masters (the API server to the node)
#   kubelet.{crt,key}        the node's serving certificate (the kubelet server,
#                            port 10250) for 127.0.0.1, the node's name and
#                            $NODE_IP when set (run-node.sh's node address)
#   nobody.{crt,key}         CN cubelet-test-nobody: authenticated, allowed nothing
#   front-proxy-client.*     CN front-proxy-client: the API server to aggregated
#                            API servers (metrics-server), with the user in headers
#   sa.{key,pub}             the service-account signing key pair
#   node.kubeconfig, admin.kubeconfig, controller-manager.kubeconfig,
#   scheduler.kubeconfig     server https://127.0.0.1:6443
#
#   tests/cluster/certs.sh [-n NODE] [-s SERVER] [DIR]
set -eu
NODE=$(hostname | tr '[:upper:]' '[:lower:]')
SERVER=https://127.0.0.1:6443
while getopts n:s: o; do
	case $o in
	n) NODE=$OPTARG ;;
	s) SERVER=$OPTARG ;;
	*) echo "usage: $0 [-n NODE] [-s SERVER] [DIR]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
D=${1:-build/cluster/pki}
mkdir -p "$D"
cd "$D"
umask 077
DAYS=3650

# P-256 keys: made at once (RSA keys took half a minute in the VM under
# qemu's software emulation)
EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
openssl req -x509 "${EC[@]}" -nodes -keyout ca.key -out ca.crt -days "$DAYS" \
	-subj "/CN=cubelet-test-ca" -addext "basicConstraints=critical,CA:TRUE" \
	-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null

# cert NAME SUBJECT EXTENDED_KEY_USAGE [SAN]
cert() {
	local ext
	ext=$(mktemp)
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature"
		echo "extendedKeyUsage=$3"
		[ -n "${4:-}" ] && echo "subjectAltName=$4"
	} >"$ext"
	openssl req "${EC[@]}" -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days "$DAYS" \
		-extfile "$ext" 2>/dev/null
	rm -f "$1.csr" "$ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
	"IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert node "/O=system:nodes/CN=system:node:$NODE" clientAuth
cert admin "/O=system:masters/CN=cubelet-test-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert kubelet "/CN=$NODE" serverAuth "IP:127.0.0.1,DNS:$NODE,DNS:localhost${NODE_IP:+,IP:$NODE_IP}"
cert nobody "/CN=cubelet-test-nobody" clientAuth
cert front-proxy-client "/CN=front-proxy-client" clientAuth
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key 2>/dev/null
openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null

# kubeconfig NAME USER: the client's kubeconfig, certificates inline
kubeconfig() {
	cat >"$1.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters:
- name: cubelet-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 ca.crt)
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$1.crt")
    client-key-data: $(base64 -w0 "$1.key")
contexts:
- name: $2@cubelet-test
  context: {cluster: cubelet-test, user: $2}
current-context: $2@cubelet-test
K
}
kubeconfig node "system:node:$NODE"
kubeconfig admin cubelet-test-admin
kubeconfig controller-manager system:kube-controller-manager
kubeconfig scheduler system:kube-scheduler
echo "$D: CA, serving and client certificates for node '$NODE', kubeconfigs for $SERVER"
