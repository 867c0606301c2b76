#!/bin/sh
# check-build-deps.sh CC PKG...: the build tools and pkg-config modules that are missing, on one
# line, each with the Debian package that has it ("protoc-c (protobuf-c-compiler), grpc.pc
# (libgrpc-dev)"); nothing when all are there. The Makefile stops with this line and points to
# `make deps` (tests/install-deps.sh), which installs them.
cc=${1:-cc}
[ $# -gt 0 ] && shift
out=""
add() { out="$out${out:+, }$1 ($2)"; }
pkg_of() {
	case $1 in
	jansson) echo libjansson-dev ;;
	yaml-0.1) echo libyaml-dev ;;
	libcgroup) echo libcgroup-dev ;;
	libsystemd) echo libsystemd-dev ;;
	libcrypto) echo libssl-dev ;;
	grpc) echo libgrpc-dev ;;
	libprotobuf-c) echo libprotobuf-c-dev ;;
	libseccomp) echo libseccomp-dev ;;
	libnl-3.0) echo libnl-3-dev ;;
	libnl-idiag-3.0) echo libnl-idiag-3-dev ;;
	libcurl) echo libcurl4-openssl-dev ;;
	libmicrohttpd) echo libmicrohttpd-dev ;;
	*) echo "the -dev package of $1" ;;
	esac
}
# shellcheck disable=SC2086
command -v ${cc%% *} >/dev/null 2>&1 || add "$cc" gcc
command -v protoc-c >/dev/null 2>&1 || add protoc-c protobuf-c-compiler
if command -v pkg-config >/dev/null 2>&1; then
	for m; do
		pkg-config --exists "$m" 2>/dev/null || add "$m.pc" "$(pkg_of "$m")"
	done
else
	add pkg-config "pkg-config; the libraries' .pc files are checked once it is there"
fi
printf '%s' "$out"
