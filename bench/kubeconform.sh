#!/bin/sh
# Build the kubeconform that `make bench` compares against into a cache dir, pinned.
#
#   bench/kubeconform.sh              build if needed, print the binary's path
#   bench/kubeconform.sh --print      print the binary's path only (builds nothing)
#
# The binary is $TJC_BENCH_BIN_DIR/kubeconform if set, else
# ${XDG_CACHE_HOME:-~/.cache}/tjc-bench/kubeconform-<version>/kubeconform.
# Idempotent; needs Go (the module comes through GOPROXY and is checked against go.sum's database).
set -eu

version=v0.7.0
module=github.com/yannh/kubeconform
bin_dir=${TJC_BENCH_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tjc-bench/kubeconform-$version}
binary="$bin_dir/kubeconform"

if [ "${1:-}" = "--print" ]; then
    echo "$binary"
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: $0 [--print]" >&2
    exit 2
fi
if [ -x "$binary" ] && [ "$(cat "$bin_dir/.pin" 2>/dev/null)" = "$version" ]; then
    echo "$binary"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "kubeconform.sh: go not found; install Go to build kubeconform $version" >&2
    exit 1
fi
mkdir -p "$bin_dir"
rm -f "$bin_dir/.pin"
echo "kubeconform.sh: building kubeconform $version into $bin_dir" >&2
CGO_ENABLED=0 GOBIN="$bin_dir" go install -trimpath -ldflags='-s -w' \
    "$module/cmd/kubeconform@$version"
echo "$version" > "$bin_dir/.pin"
echo "$binary"
