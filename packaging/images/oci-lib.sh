# shellcheck shell=sh
# packaging/images/oci-lib.sh — reproducible OCI image archives from a root directory, without a
# registry or docker. Sourced by build-images.sh and tests/conformance/images.sh; the caller sets
# OUT (where NAME.tar goes), WORK (a scratch directory), SOURCE_DATE_EPOCH, platform (the JSON
# members of the OCI platform: "architecture":"amd64","os":"linux") and created (an RFC 3339 time).

# A reproducible tar: fixed mtime and owner, sorted entries, GNU format (no pax headers, which
# would carry a process id and times in their names and records).
rtar() {
        dir=$1
        file=$2
        shift 2
        tar --create --file="$file" --directory="$dir" --format=gnu --sort=name \
                --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner "$@"
}

sha256() {
        sha256sum "$1" | cut -d ' ' -f 1
}

size() {
        wc -c <"$1" | tr -d ' '
}

# copy_libs ROOT BINARY...: the shared libraries ldd names for the binaries, copied under ROOT at
# their own paths (mode 0755), so the dynamic loader finds them in the image as on the host. ldd
# lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
copy_libs() {
        root=$1
        shift
        for l in $(for b in "$@"; do ldd "$b" 2>/dev/null; done |
                awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u); do
                mkdir -p "$root$(dirname "$l")"
                cp -L "$l" "$root$l"
                chmod 0755 "$root$l"
        done
}

# oci_archive NAME REF LAYER_TAR CONFIG_BODY
#   CONFIG_BODY is the JSON text of the config's "config" object (Entrypoint/Cmd/Env ...).
#   Writes $OUT/NAME.tar and prints the manifest digest.
oci_archive() {
        name=$1
        ref=$2
        layer=$3
        body=$4
        lay=$WORK/$name.layout
        mkdir -p "$lay/blobs/sha256"

        layer_sha=$(sha256 "$layer")
        layer_size=$(size "$layer")
        cp "$layer" "$lay/blobs/sha256/$layer_sha"

        cfg=$WORK/$name.config.json
        printf '{"created":"%s",%s,"config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"%s","created_by":"cubelet packaging/images/build-images.sh"}]}' \
                "$created" "$platform" "$body" "$layer_sha" "$created" >"$cfg"
        cfg_sha=$(sha256 "$cfg")
        cfg_size=$(size "$cfg")
        mv "$cfg" "$lay/blobs/sha256/$cfg_sha"

        man=$WORK/$name.manifest.json
        printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
                "$cfg_sha" "$cfg_size" "$layer_sha" "$layer_size" >"$man"
        man_sha=$(sha256 "$man")
        man_size=$(size "$man")
        mv "$man" "$lay/blobs/sha256/$man_sha"

        printf '{"imageLayoutVersion":"1.0.0"}' >"$lay/oci-layout"
        printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"},"platform":{%s}}]}' \
                "$man_sha" "$man_size" "$ref" "$ref" "$platform" >"$lay/index.json"

        find "$lay" -type d -exec chmod 0755 {} +
        find "$lay" -type f -exec chmod 0644 {} +
        rtar "$lay" "$WORK/$name.tar" oci-layout index.json blobs
        mv "$WORK/$name.tar" "$OUT/$name.tar"
        echo "sha256:$man_sha"
}

