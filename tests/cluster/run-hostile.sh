#!/bin/bash
# cubelet against a hostile API server (tests/cluster/hostile-api.py, HTTPS
# on the host's loopback): a 429 with Retry-After holds every request for
# its seconds; a pods list that is not JSON, then a 500, each named with the
# request and logged once, retried on the back-off; a list with a 3 MiB pod;
# a watch cut inside an object and one the server closes at once, watched
# again from the last version (nothing lost, no hot loop); an expired
# certificate named. No container runtime (pods wait in ContainerCreating).
# TAP; 77 without root, a cgroup2 mount or /usr/bin/python3.
#
#   tests/cluster/run-hostile.sh BUILD_DIR
set -u
B=${1:?usage: run-hostile.sh BUILD_DIR}
CUBELET=$(cd "$B" && pwd)/cubelet
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NODE=hostile-node
PORT=16443
PORT2=16444
n=0

# shellcheck disable=SC1091
. "$ROOT/tests/cluster/lib.sh"
[ "$(id -u)" = 0 ] || skip "not root"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip "no cgroup2 mount"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
for port in $PORT $PORT2; do
	if ss -Hltn "sport = :$port" | grep -q .; then skip "127.0.0.1:$port is in use"; fi
done

T=$(mktemp -d /tmp/cubelet-hostile-XXXXXX)
CGROOT=$CG/cubelet-hostile-$$
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	find "$CGROOT" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# ---- certificates: a CA, the server's for 127.0.0.1, one that expired --------------------------
(
	cd "$T" || exit 1
	EC=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
	openssl req -x509 "${EC[@]}" -keyout ca.key -out ca.crt -days 2 -subj /CN=hostile-ca
	openssl req "${EC[@]}" -keyout srv.key -out srv.csr -subj /CN=127.0.0.1
	printf 'subjectAltName=IP:127.0.0.1\n' >ext
	openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 -extfile ext
	openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out old.crt -days 0 -extfile ext
) >/dev/null 2>&1 || skip "openssl could not make the certificates"

kubeconfig() {
	cat >"$T/$1.kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		clusters: [{name: c, cluster: {server: "https://127.0.0.1:$2", certificate-authority: ca.crt}}]
		users: [{name: u, user: {token: hostile-token}}]
		contexts: [{name: x, context: {cluster: c, user: u}}]
		current-context: x
	EOF
}
serve() { # NAME PORT CERT
	/usr/bin/python3 "$ROOT/tests/cluster/hostile-api.py" "$2" "$T/$3" "$T/srv.key" "$T/mode" "$T/$1.req" \
		>"$T/$1.server.log" 2>&1 &
	PIDS="$PIDS $!"
	for _ in $(seq 40); do ss -Hltn "sport = :$2" | grep -q . && return 0; sleep 0.25; done
	return 1
}
reqs() { jq -c --arg m "$2" --arg p "$3" 'select(.method == $m and (.path | startswith($p)))' "$T/$1.req" 2>/dev/null; }
count() { reqs "$@" | wc -l; }
log_count() { grep -c -F -- "$2" "$T/$1.log"; }

echo 'nodes=429 list=garbage' >"$T/mode"
kubeconfig good "$PORT"
serve good "$PORT" srv.crt || skip "the hostile server did not start"
run a --node-name "$NODE" --kubeconfig "$T/good.kubeconfig"

# ---- 429 with Retry-After: every request waits -------------------------------------------------
two_429() { [ "$(reqs good POST /api/v1/nodes | jq -s '[.[] | select(.status == 429)] | length')" -ge 2 ]; }
check "a 429 with Retry-After: 3 on POST /api/v1/nodes: asked again" wait_until 20 two_429
gap=$(jq -s '[.[] | select(.method == "POST" and .path == "/api/v1/nodes") | .t] | .[1] - .[0]' "$T/good.req")
check "...not before its Retry-After (3 s; the node's own back-off starts at 200 ms): ${gap} s" \
	awk -v g="$gap" 'BEGIN { exit !(g >= 2.9) }'
first=$(jq -s '[.[] | select(.method == "POST" and .path == "/api/v1/nodes") | .t] | .[0]' "$T/good.req")
held=$(jq -s --argjson f "$first" '[.[] | select(.t > $f + 0.05 and .t < $f + 2.9)] | length' "$T/good.req")
is "$held" 0 "...and no other request started in those 3 s (the pods list waits too)"
is "$(log_count a 'POST /api/v1/nodes: 429: too many requests, slow down (Retry-After 3 s: no request before)')" 1 \
	"the journal names the request, the server's message and the wait, once"

# ---- a pods list that is not JSON, then a 500 ----------------------------------------------------
check "a pods list that is not JSON: named (the request, the parser's error)" \
	wait_until 20 grep -q -F "pods: list: GET /api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&limit=500&resourceVersion=0: 200 with a body that is not JSON" "$T/a.log"
echo 'list=500' >"$T/mode"
lists0=$(count good GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&limit")
check "a 500: named with the server's Status message" \
	wait_until 40 grep -q -F ": 500: etcdserver: request timed out; retrying" "$T/a.log"
sleep 6
lists=$(($(count good GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&limit") - lists0))
check "retried on the back-off, no hot loop ($lists lists in about 10 s)" test "$lists" -le 6
is "$(log_count a 'etcdserver: request timed out')" 1 "each distinct error logged once"

# ---- a list with a 3 MiB object ------------------------------------------------------------------
echo 'list=big' >"$T/mode"
big() { [ "$(status_json a | jq -r '[.pods[] | select(.name == "big")] | length')" = 1 ]; }
check "a list with a 3 MiB pod: taken (the pod is on the node)" wait_until 60 big
check "...and the watch brings the pod 'late'" wait_until 20 sh -c "'$CUBELET' status --socket '$T/a/cubelet.sock' -o json | jq -e '.pods[] | select(.name == \"late\")' >/dev/null"

# ---- a watch cut inside an object, a watch closed at once ---------------------------------------
w0=$(count good GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&watch=true")
echo 'list=big watch=cut' >"$T/mode"
check "a watch cut inside an object: named" \
	wait_until 30 grep -q -F "the stream ended inside an object" "$T/a.log"
echo 'list=big watch=short' >"$T/mode"
check "a watch the server closes at once: named (client-go's 'very short watch')" \
	wait_until 30 grep -q -F "very short watch" "$T/a.log"
sleep 8
w=$(($(count good GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&watch=true") - w0))
check "watched again on the back-off, no hot loop ($w watches in about 12 s)" test "$w" -le 10
rv=$(reqs good GET "/api/v1/pods?fieldSelector=spec.nodeName%3D$NODE&watch=true" | tail -n 1 | jq -r .path | grep -o 'resourceVersion=[0-9]*')
is "$rv" "resourceVersion=7" "...from the last version seen (nothing lost)"
echo 'list=big' >"$T/mode"
still() { [ "$(status_json a | jq -r '[.pods[] | select(.name == "big" or .name == "late")] | length')" = 2 ]; }
check "the pods stay on the node through it all" wait_until 20 still
alive() { status_json a | jq -e .apiServer >/dev/null; }
check "cubelet is alive and answers" alive

# ---- an expired certificate ----------------------------------------------------------------------
sleep 1 # old.crt's notAfter is the second it was made
kubeconfig old "$PORT2"
serve old "$PORT2" old.crt || nok "the second server did not start"
run b --node-name "$NODE" --kubeconfig "$T/old.kubeconfig"
check "an expired serving certificate: named" \
	wait_until 20 grep -q -F "certificate has expired" "$T/b.log"
sleep 4
is "$(grep -c -F 'certificate has expired' "$T/b.log")" 3 \
	"logged once per request kind that met it (the Node, the pods list, the Services list), not at each retry"
echo "1..$n"
