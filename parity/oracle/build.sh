#!/bin/sh
# Build the parity test oracle (this folder's Go program, pinned by go.mod) into a cache dir.
#
#   parity/oracle/build.sh              build if needed, print the binary's path
#   parity/oracle/build.sh --print      print the binary's path only (builds nothing)
#
# The dir is $TJC_ORACLE_DIR if set, else ${XDG_CACHE_HOME:-~/.cache}/tjc-oracle/<pin>/, where
# <pin> is the Trainer version plus a hash of go.mod, go.sum and the Go sources. Beside the
# binary: crds/, the Trainer CRDs of the pinned module. Idempotent; Go's caches make a
# rebuild cheap (a cold build compiles Kubernetes libraries: several minutes).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../e2e/pin.sh"
trainer_version=$(pin_mod_version 'github\.com/kubeflow/trainer/v2' "$here/go.mod")
if [ -z "$trainer_version" ]; then
    echo "build.sh: cannot read the Trainer version from $here/go.mod" >&2
    exit 1
fi
digest=$(cd "$here" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
pin="trainer-$trainer_version-$digest"
dir=$(pin_cache_dir "${TJC_ORACLE_DIR:-}" tjc-oracle "$pin")
pin_print_flag --print "$dir/oracle" "$@"

if pin_is_built "$dir/.pin" "$pin" "$dir/oracle"; then
    echo "$dir/oracle"
    exit 0
fi
pin_need_go build.sh "see go.mod for the minimum version"

mkdir -p "$dir"
rm -f "$dir/.pin"
cd "$here"
echo "build.sh: building the parity oracle (Trainer $trainer_version) into $dir" >&2
module_dir=$(go list -mod=readonly -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
if [ -z "$module_dir" ] || [ ! -d "$module_dir/manifests/base/crds" ]; then
    go mod download github.com/kubeflow/trainer/v2
    module_dir=$(go list -mod=readonly -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
fi
CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags='-s -w' -o "$dir/oracle.tmp" .
rm -rf "$dir/crds"
mkdir -p "$dir/crds"
cp "$module_dir"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$dir/crds/"
chmod u+w "$dir"/crds/*.yaml
mv "$dir/oracle.tmp" "$dir/oracle"
echo "$pin" > "$dir/.pin"
echo "$dir/oracle"
