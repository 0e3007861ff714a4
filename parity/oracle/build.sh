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
trainer_version=$(sed -n 's#^[[:space:]]*github.com/kubeflow/trainer/v2 \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -n 1)
if [ -z "$trainer_version" ]; then
    echo "build.sh: cannot read the Trainer version from $here/go.mod" >&2
    exit 1
fi
digest=$(cd "$here" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
pin="trainer-$trainer_version-$digest"
dir=${TJC_ORACLE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tjc-oracle/$pin}

if [ "${1:-}" = "--print" ]; then
    echo "$dir/oracle"
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: $0 [--print]" >&2
    exit 2
fi

if [ -x "$dir/oracle" ] && [ -f "$dir/.pin" ] && [ "$(cat "$dir/.pin")" = "$pin" ]; then
    echo "$dir/oracle"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: go not found; install Go (see go.mod for the minimum version)" >&2
    exit 1
fi

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
