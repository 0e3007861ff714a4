#!/bin/sh
# Build the parity test oracle (this folder's Go program) for one Kubeflow Trainer release, or
# for every served release, into a cache dir.
#
#   parity/oracle/build.sh [RELEASE]          build if needed, print the binary's path
#   parity/oracle/build.sh --print [RELEASE]  print the binary's path only (builds nothing)
#   parity/oracle/build.sh --all              build every release, print each binary's path
#   parity/oracle/build.sh --tidy RELEASE     rewrite releases/RELEASE/go.mod and go.sum
#
# RELEASE defaults to the version go.mod pins (the newest, v2.3.0), built from this folder as
# it is. Each other served release has releases/<version>/: its own go.mod and go.sum (that
# release's own module versions: one build cannot link two versions of a module) and its
# release.go (what differs in the Trainer API); the rest of the sources is shared and copied
# beside them into the cache dir to be built.
#
# The dir is ${TJC_ORACLE_DIR:-${XDG_CACHE_HOME:-~/.cache}/tjc-oracle}/<pin>/, where <pin> is
# the Trainer version plus a hash of the go.mod, go.sum and Go sources built. Beside the
# binary: crds/, the Trainer CRDs of the pinned module. Idempotent; Go's caches make a rebuild
# cheap (a cold build compiles Kubernetes libraries: several minutes per release).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../e2e/pin.sh"

default=$(pin_mod_version 'github\.com/kubeflow/trainer/v2' "$here/go.mod")
if [ -z "$default" ]; then
    echo "build.sh: cannot read the Trainer version from $here/go.mod" >&2
    exit 1
fi

usage() {
    echo "usage: $0 [--print] [RELEASE] | --all | --tidy RELEASE" >&2
    exit 2
}

# releases: every release this folder builds, oldest first.
releases() {
    for found in "$here"/releases/v*/go.mod; do
        [ -f "$found" ] && basename "$(dirname "$found")"
    done
    echo "$default"
}

# module_files RELEASE: the go.mod, go.sum and release.go a release builds with.
module_files() {
    if [ "$1" = "$default" ]; then
        echo "$here/go.mod $here/go.sum $here/release.go"
    elif [ -f "$here/releases/$1/go.mod" ]; then
        echo "$here/releases/$1/go.mod $here/releases/$1/go.sum $here/releases/$1/release.go"
    else
        echo "build.sh: no oracle for Trainer $1 (served: $(releases | tr '\n' ' '))" >&2
        exit 2
    fi
}

# shared_sources: the Go files every release builds (all but release.go).
shared_sources() {
    for source in "$here"/*.go; do
        [ "$(basename "$source")" = release.go ] || echo "$source"
    done
}

# stage RELEASE DIR: the sources of RELEASE, ready to build, in DIR.
stage() {
    rm -rf "$2"
    mkdir -p "$2"
    # shellcheck disable=SC2046
    cp $(shared_sources) "$2/"
    set -- "$1" "$2" $(module_files "$1")
    cp "$3" "$2/go.mod"
    if [ -f "$4" ]; then
        cp "$4" "$2/go.sum"
    fi
    cp "$5" "$2/release.go"
}

# pin_of RELEASE: trainer-<release>-<hash of what is built>.
pin_of() {
    # shellcheck disable=SC2046
    digest=$(cat $(module_files "$1") $(shared_sources) | sha256sum | cut -c1-12)
    echo "trainer-$1-$digest"
}

dir_of() {
    echo "${TJC_ORACLE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tjc-oracle}/$(pin_of "$1")"
}

build() {
    release=$1
    dir=$(dir_of "$release")
    pin=$(basename "$dir")
    if pin_is_built "$dir/.pin" "$pin" "$dir/oracle"; then
        echo "$dir/oracle"
        return 0
    fi
    pin_need_go build.sh "see go.mod for the minimum version"
    mkdir -p "$dir"
    rm -f "$dir/.pin"
    src=$here
    if [ "$release" != "$default" ]; then
        src=$dir/src
        stage "$release" "$src"
    fi
    echo "build.sh: building the parity oracle (Trainer $release) into $dir" >&2
    module_dir=$(cd "$src" && go mod download -json github.com/kubeflow/trainer/v2 |
        sed -n 's#^[[:space:]]*"Dir": "\(.*\)",*$#\1#p')
    if [ -z "$module_dir" ] || [ ! -d "$module_dir/manifests/base/crds" ]; then
        echo "build.sh: cannot download github.com/kubeflow/trainer/v2 $release" >&2
        exit 1
    fi
    (cd "$src" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags='-s -w' \
        -o "$dir/oracle.tmp" .)
    rm -rf "$dir/crds"
    mkdir -p "$dir/crds"
    cp "$module_dir"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$dir/crds/"
    chmod u+w "$dir"/crds/*.yaml
    mv "$dir/oracle.tmp" "$dir/oracle"
    echo "$pin" > "$dir/.pin"
    echo "$dir/oracle"
}

# tidy RELEASE: go mod tidy of the staged sources, written back to releases/RELEASE/.
tidy() {
    [ "$1" != "$default" ] || { echo "build.sh: run go mod tidy in $here for $1" >&2; exit 2; }
    module_files "$1" >/dev/null
    pin_need_go build.sh "see go.mod for the minimum version"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    stage "$1" "$work"
    (cd "$work" && go mod tidy)
    cp "$work/go.mod" "$here/releases/$1/go.mod"
    cp "$work/go.sum" "$here/releases/$1/go.sum"
}

case "${1:-}" in
    --print)
        [ $# -le 2 ] || usage
        module_files "${2:-$default}" >/dev/null
        echo "$(dir_of "${2:-$default}")/oracle"
        ;;
    --all)
        [ $# -eq 1 ] || usage
        for release in $(releases); do
            build "$release"
        done
        ;;
    --tidy)
        [ $# -eq 2 ] || usage
        tidy "$2"
        ;;
    -*)
        usage
        ;;
    *)
        [ $# -le 1 ] || usage
        module_files "${1:-$default}" >/dev/null
        build "${1:-$default}"
        ;;
esac
