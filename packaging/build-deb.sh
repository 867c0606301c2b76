#!/bin/sh
# build-deb.sh VERSION OUTDIR: the binary packages cubelet and cubelet-gpu-plugin, version
# VERSION, into OUTDIR (make deb). The tree (git's tracked and untracked-but-not-ignored files,
# as they are now) and packaging/debian/ are copied to OUTDIR/cubelet-VERSION/, where
# dpkg-buildpackage runs: the checkout is never written to. The log is OUTDIR/build.log. The
# packages of an earlier build in OUTDIR are removed.
set -eu
v=${1:?usage: build-deb.sh VERSION OUTDIR} out=${2:?usage: build-deb.sh VERSION OUTDIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
case $v in
[0-9]*) ;;
*) echo "build-deb: '$v' is not a Debian version (it must start with a digit)" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$out/cubelet-$v
rm -rf "$stage"
mkdir -p "$stage"
cd "$repo"
if git rev-parse --git-dir >/dev/null 2>&1; then
	# (a tracked file deleted in the work tree is skipped: --ignore-failed-read)
	git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$stage" -xf -
else
	tar --exclude=./build --exclude=./.git -cf - . | tar -C "$stage" -xf -
fi
rm -rf "$stage/build" "$stage/debian"
cp -a packaging/debian "$stage/debian"
# A native package: the changelog only carries the version.
cat >"$stage/debian/changelog" <<CL
cubelet ($v) unstable; urgency=medium

  * Built from $(git describe --always --dirty 2>/dev/null || echo "a source tree") by make deb.

 -- cubelet maintainers <maintainers@users.noreply.a-seed-a0547aec.example>  $(date -R)
CL
# OUTDIR holds one build: `apt install ./OUTDIR/cubelet_*.deb` must name one package.
rm -rf "$out"/cubelet*_*.deb "$out"/cubelet_*.changes "$out"/cubelet_*.buildinfo
find "$out" -mindepth 1 -maxdepth 1 -type d -name 'cubelet-*' ! -path "$stage" -exec rm -rf {} +
cd "$stage"
if ! DEB_BUILD_OPTIONS="parallel=${DEB_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
fi
ls "$out"/cubelet*_"$v"_*.deb
