#!/bin/sh
# manpages.sh BUILD_DIR VERSION: cubelet(8) and cubelet-gpu-plugin(8) into BUILD_DIR/man, made by
# help2man from the binaries' --help (and `cubelet run --help`), with the sections of *.h2m.
set -eu
b=$1 v=$2
here=$(dirname "$0")
mkdir -p "$b/man"
# `cubelet run --help` as a verbatim section (roff: backslashes doubled, no line starts with a dot)
{
	cat "$here/cubelet.h2m"
	printf '[RUN OPTIONS]\n.nf\n'
	"$b/cubelet" run --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
	printf '.fi\n'
} >"$b/man/cubelet.h2m"
help2man --no-info --section=8 --version-string="$v" --include="$b/man/cubelet.h2m" \
	--name="node agent for Kubernetes-style pods" --output="$b/man/cubelet.8" "$b/cubelet"
help2man --no-info --section=8 --version-string="$v" --include="$here/cubelet-gpu-plugin.h2m" \
	--name="NVIDIA GPU device plugin (nvidia.com/gpu) for cubelet and kubelet" \
	--output="$b/man/cubelet-gpu-plugin.8" "$b/cubelet-gpu-plugin"
