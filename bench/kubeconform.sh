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
. "$(cd "$(dirname "$0")" && pwd)/../e2e/pin.sh"
bin_dir=$(pin_cache_dir "${TJC_BENCH_BIN_DIR:-}" tjc-bench "kubeconform-$version")
binary="$bin_dir/kubeconform"
pin_print_flag --print "$binary" "$@"
if pin_is_built "$bin_dir/.pin" "$version" "$binary"; then
    echo "$binary"
    exit 0
fi
pin_need_go kubeconform.sh "to build kubeconform $version"
mkdir -p "$bin_dir"
rm -f "$bin_dir/.pin"
echo "kubeconform.sh: building kubeconform $version into $bin_dir" >&2
CGO_ENABLED=0 GOBIN="$bin_dir" go install -trimpath -ldflags='-s -w' \
    "$module/cmd/kubeconform@$version"
echo "$version" > "$bin_dir/.pin"
echo "$binary"
