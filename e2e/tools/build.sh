#!/bin/sh
# Build the kustomize and helm (Helm 3) pinned in go.mod (beside this script), the Helm 4
# pinned in ../helm4/go.mod (as helm4) and the Argo CD cmp-server harness pinned in
# ../argocd/go.mod (Argo CD's own config management plugin server and repo-server client, see
# ../argocd/main.go), into a cache dir.
#
#   e2e/tools/build.sh              build if needed, print the binary dir
#   e2e/tools/build.sh --print-dir  print the binary dir only (builds nothing)
#
# The binary dir is $TJC_TOOLS_BIN_DIR if set, else
# ${XDG_CACHE_HOME:-~/.cache}/tjc-tools/kustomize-<version>-helm-<v3 version>-helm-<v4 version>-
# argocd-<version>/.
# Idempotent: when the binaries and the stamp of this pin are there, it does nothing.
# Needs Go (module downloads go through GOPROXY); the go build cache makes rebuilds quick.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../pin.sh"
gomod="$here/go.mod"
argocd_dir=$(cd "$here/../argocd" && pwd)
helm4_dir=$(cd "$here/../helm4" && pwd)

kustomize_version=$(pin_mod_version 'sigs\.k8s\.io/kustomize/kustomize/v5' "$gomod")
helm_version=$(pin_mod_version 'helm\.sh/helm/v3' "$gomod")
helm4_version=$(pin_mod_version 'helm\.sh/helm/v4' "$helm4_dir/go.mod")
argocd_version=$(pin_mod_version 'github\.com/argoproj/argo-cd/v3' "$argocd_dir/go.mod")
if [ -z "$kustomize_version" ] || [ -z "$helm_version" ] || [ -z "$helm4_version" ] ||
    [ -z "$argocd_version" ]; then
    echo "build.sh: cannot read the kustomize, helm or argo-cd version from the go.mod files" >&2
    exit 1
fi
pin="kustomize-$kustomize_version-helm-$helm_version-helm-$helm4_version-argocd-$argocd_version"
bin_dir=$(pin_cache_dir "${TJC_TOOLS_BIN_DIR:-}" tjc-tools "$pin")
pin_print_flag --print-dir "$bin_dir" "$@"

stamp="$bin_dir/.pin"
if pin_is_built "$stamp" "$pin" "$bin_dir/kustomize" "$bin_dir/helm" "$bin_dir/helm4" \
    "$bin_dir/argocd-cmp-harness"; then
    echo "$bin_dir"
    exit 0
fi
pin_need_go build.sh "see go.mod for the minimum version"

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
echo "build.sh: building helm $helm4_version into $bin_dir (as helm4)" >&2
(cd "$helm4_dir" && go build -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm4_version" \
    -o "$bin_dir/helm4.tmp" helm.sh/helm/v4/cmd/helm)
echo "build.sh: building Argo CD $argocd_version cmp-server harness into $bin_dir" >&2
(cd "$argocd_dir" && go build -trimpath \
    -ldflags="-s -w -X github.com/argoproj/argo-cd/v3/common.version=${argocd_version#v}" \
    -o "$bin_dir/argocd-cmp-harness.tmp" .)
mv "$bin_dir/kustomize.tmp" "$bin_dir/kustomize"
mv "$bin_dir/helm.tmp" "$bin_dir/helm"
mv "$bin_dir/helm4.tmp" "$bin_dir/helm4"
mv "$bin_dir/argocd-cmp-harness.tmp" "$bin_dir/argocd-cmp-harness"
echo "$pin" > "$stamp"
echo "$bin_dir"
