#!/bin/sh
# Build the kustomize and helm pinned in go.mod (beside this script), and the Argo CD
# cmp-server harness pinned in ../argocd/go.mod (Argo CD's own config management plugin server
# and repo-server client, see ../argocd/main.go), into a cache dir.
#
#   e2e/tools/build.sh              build if needed, print the binary dir
#   e2e/tools/build.sh --print-dir  print the binary dir only (builds nothing)
#
# The binary dir is $TJC_TOOLS_BIN_DIR if set, else
# ${XDG_CACHE_HOME:-~/.cache}/tjc-tools/kustomize-<version>-helm-<version>-argocd-<version>/.
# Idempotent: when the binaries and the stamp of this pin are there, it does nothing.
# Needs Go (module downloads go through GOPROXY); the go build cache makes rebuilds quick.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
gomod="$here/go.mod"
argocd_dir=$(cd "$here/../argocd" && pwd)

# The versions come from the require lines of go.mod (tab or "require ", module, space, version).
mod_version() {
    sed -n "s#^[[:space:]]*\\(require \\)\\{0,1\\}$1 \\(v[^ ]*\\).*#\\2#p" "$2" | head -n 1
}
kustomize_version=$(mod_version 'sigs\.k8s\.io/kustomize/kustomize/v5' "$gomod")
helm_version=$(mod_version 'helm\.sh/helm/v3' "$gomod")
argocd_version=$(mod_version 'github\.com/argoproj/argo-cd/v3' "$argocd_dir/go.mod")
if [ -z "$kustomize_version" ] || [ -z "$helm_version" ] || [ -z "$argocd_version" ]; then
    echo "build.sh: cannot read the kustomize, helm or argo-cd version from the go.mod files" >&2
    exit 1
fi
pin="kustomize-$kustomize_version-helm-$helm_version-argocd-$argocd_version"
bin_dir=${TJC_TOOLS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tjc-tools/$pin}

if [ "${1:-}" = "--print-dir" ]; then
    echo "$bin_dir"
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: $0 [--print-dir]" >&2
    exit 2
fi

stamp="$bin_dir/.pin"
if [ -x "$bin_dir/kustomize" ] && [ -x "$bin_dir/helm" ] && [ -x "$bin_dir/argocd-cmp-harness" ] &&
    [ -f "$stamp" ] &&
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
cd "$here"
export CGO_ENABLED=0
# The versions the tools report (`kustomize version`, `helm version`).
echo "build.sh: building kustomize $kustomize_version into $bin_dir" >&2
go build -trimpath \
    -ldflags="-s -w -X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$kustomize_version" \
    -o "$bin_dir/kustomize.tmp" sigs.k8s.io/kustomize/kustomize/v5
echo "build.sh: building helm $helm_version into $bin_dir" >&2
go build -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version" \
    -o "$bin_dir/helm.tmp" helm.sh/helm/v3/cmd/helm
echo "build.sh: building Argo CD $argocd_version cmp-server harness into $bin_dir" >&2
(cd "$argocd_dir" && go build -trimpath \
    -ldflags="-s -w -X github.com/argoproj/argo-cd/v3/common.version=${argocd_version#v}" \
    -o "$bin_dir/argocd-cmp-harness.tmp" .)
mv "$bin_dir/kustomize.tmp" "$bin_dir/kustomize"
mv "$bin_dir/helm.tmp" "$bin_dir/helm"
mv "$bin_dir/argocd-cmp-harness.tmp" "$bin_dir/argocd-cmp-harness"
echo "$pin" > "$stamp"
echo "$bin_dir"
