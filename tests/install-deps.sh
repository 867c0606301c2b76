#!/bin/sh
# Installs the Debian packages the build and the tests need; idempotent.
set -eu
PKGS="gcc clang make pkg-config git libjansson-dev libyaml-dev libcgroup-dev libsystemd-dev libssl-dev
libcmocka-dev libclang-rt-14-dev clang-format libgrpc-dev protobuf-c-compiler libprotobuf-c-dev
containerd runc containernetworking-plugins busybox-static file jq libseccomp-dev libnl-3-dev libnl-idiag-3-dev
python3-grpcio python3-protobuf protobuf-compiler
libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev nginx-light prometheus openssl curl
debhelper dpkg-dev fakeroot lintian help2man zlib1g-dev etcd-server etcd-client docker-registry apache2-utils gnuplot-nox"
missing=""
for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: missing packages:$missing (run 'make deps' as root)" >&2
        exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
# the registry of the image pull secrets' test runs on the guest's loopback,
# started by the test: its packaged service (on :5000, every address) masked
# before the package could start it
[ -e /etc/systemd/system/docker-registry.service ] || ln -s /dev/null /etc/systemd/system/docker-registry.service
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
