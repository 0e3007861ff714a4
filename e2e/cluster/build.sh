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
gomod="$here/go.mod"

# The versions come from the require lines of go.mod (tab, module, space, version).
mod_version() {
    sed -n "s#^[[:space:]]*$1 \\(v[^ ]*\\).*#\\1#p" "$gomod" | head -n 1
}
k8s_version=$(mod_version 'k8s\.io/kubernetes')
etcd_version=$(mod_version 'go\.etcd\.io/etcd/server/v3')
if [ -z "$k8s_version" ] || [ -z "$etcd_version" ]; then
    echo "build.sh: cannot read the k8s.io/kubernetes or etcd version from $gomod" >&2
    exit 1
fi
pin="k8s-$k8s_version-etcd-$etcd_version"
bin_dir=${TJC_E2E_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tjc-e2e/$pin}

if [ "${1:-}" = "--print-dir" ]; then
    echo "$bin_dir"
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: $0 [--print-dir]" >&2
    exit 2
fi

stamp="$bin_dir/.pin"
if [ -x "$bin_dir/kube-apiserver" ] && [ -x "$bin_dir/etcd" ] && [ -f "$stamp" ] &&
    [ "$(cat "$stamp")" = "$pin" ]; then
    echo "$bin_dir"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: go not found; install Go (see go.mod for the minimum version)" >&2
    exit 1
fi

mkdir -p "$bin_dir"
rm -f "$stamp"
# The version the API server reports (/version); its emulation version comes from the source.
minor=${k8s_version#v1.}
minor=${minor%%.*}
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
k8s_ldflags="$k8s_ldflags -X k8s.io/component-base/version.gitMajor=1"
k8s_ldflags="$k8s_ldflags -X k8s.io/component-base/version.gitMinor=$minor"
k8s_ldflags="$k8s_ldflags -X k8s.io/component-base/version.gitTreeState=clean"

cd "$here"
export CGO_ENABLED=0
echo "build.sh: building etcd $etcd_version into $bin_dir" >&2
go build -trimpath -ldflags='-s -w' -o "$bin_dir/etcd.tmp" go.etcd.io/etcd/server/v3
echo "build.sh: building kube-apiserver $k8s_version into $bin_dir" >&2
go build -trimpath -ldflags="$k8s_ldflags" -o "$bin_dir/kube-apiserver.tmp" \
    k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin_dir/etcd.tmp" "$bin_dir/etcd"
mv "$bin_dir/kube-apiserver.tmp" "$bin_dir/kube-apiserver"
echo "$pin" > "$stamp"
echo "$bin_dir"
