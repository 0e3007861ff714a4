#!/bin/sh
# Build the kube-apiserver and etcd pinned in go.mod (beside this script) into a cache dir.
#
#   e2e/cluster/build.sh              build if needed, print the binary dir
#   e2e/cluster/build.sh --print-dir  print the binary dir only (builds nothing)
#
# The binary dir is $TJC_E2E_BIN_DIR if set, else
# ${XDG_CACHE_HOME:-~/.cache}/tjc-e2e/k8s-<version>-etcd-<version>/.
# Idempotent: when both binaries and the stamp of this pin are there, it does nothing.
# Needs Go (module downloads go through GOPROXY); the go build cache makes rebuilds quick.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../pin.sh"
gomod="$here/go.mod"

k8s_version=$(pin_mod_version 'k8s\.io/kubernetes' "$gomod")
etcd_version=$(pin_mod_version 'go\.etcd\.io/etcd/server/v3' "$gomod")
if [ -z "$k8s_version" ] || [ -z "$etcd_version" ]; then
    echo "build.sh: cannot read the k8s.io/kubernetes or etcd version from $gomod" >&2
    exit 1
fi
pin="k8s-$k8s_version-etcd-$etcd_version"
bin_dir=$(pin_cache_dir "${TJC_E2E_BIN_DIR:-}" tjc-e2e "$pin")
pin_print_flag --print-dir "$bin_dir" "$@"

stamp="$bin_dir/.pin"
if pin_is_built "$stamp" "$pin" "$bin_dir/kube-apiserver" "$bin_dir/etcd"; then
    echo "$bin_dir"
    exit 0
fi
pin_need_go build.sh "see go.mod for the minimum version"

mkdir -p "$bin_dir"
rm -f "$stamp"
cd "$here"
export CGO_ENABLED=0
echo "build.sh: building etcd $etcd_version into $bin_dir" >&2
go build -trimpath -ldflags='-s -w' -o "$bin_dir/etcd.tmp" go.etcd.io/etcd/server/v3
echo "build.sh: building kube-apiserver $k8s_version into $bin_dir" >&2
go build -trimpath -ldflags="$(pin_k8s_ldflags "$k8s_version")" \
    -o "$bin_dir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin_dir/etcd.tmp" "$bin_dir/etcd"
mv "$bin_dir/kube-apiserver.tmp" "$bin_dir/kube-apiserver"
echo "$pin" > "$stamp"
echo "$bin_dir"
