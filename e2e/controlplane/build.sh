#!/bin/sh
# Build the rest of a control plane for the full-path e2e tests into a cache dir:
# kube-controller-manager and kube-scheduler (pinned in go.mod beside this script, at the
# Kubernetes version of ../cluster/go.mod, so they share the API server's build cache), the JobSet
# controller, kwok, and Kubeflow Trainer's controller manager (each from its own module at
# the version below, built with that module's go.mod and go.sum as its release is), and into
# crds/ the scheduler-plugins PodGroup CRD that Trainer's go.mod pins.
#
#   e2e/controlplane/build.sh              build what is missing, print the binary dir
#   e2e/controlplane/build.sh --print-dir  print the binary dir only (builds nothing)
#
# The binary dir is $TJC_CP_BIN_DIR if set, else
# ${XDG_CACHE_HOME:-~/.cache}/tjc-cp/<pin>/. Idempotent: each binary is built once per pin
# (a half-done build leaves no binary behind); when the stamp of this pin is there, it does
# nothing. Needs Go; modules come through GOPROXY.
set -eu

JOBSET_VERSION=v0.12.0
KWOK_VERSION=v0.7.0
TRAINER_VERSION=v2.3.0

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../pin.sh"
cluster="$here/../cluster"
k8s_version=$(pin_mod_version 'k8s\.io/kubernetes' "$cluster/go.mod")
own_version=$(pin_mod_version 'k8s\.io/kubernetes' "$here/go.mod")
if [ -z "$k8s_version" ] || [ "$k8s_version" != "$own_version" ]; then
    echo "build.sh: k8s.io/kubernetes in $here/go.mod ($own_version) is not the one of" \
        "$cluster/go.mod ($k8s_version); pin both to one version" >&2
    exit 1
fi
pin="k8s-$k8s_version-jobset-$JOBSET_VERSION-kwok-$KWOK_VERSION-trainer-$TRAINER_VERSION"
bin_dir=$(pin_cache_dir "${TJC_CP_BIN_DIR:-}" tjc-cp "$pin")
pin_print_flag --print-dir "$bin_dir" "$@"

stamp="$bin_dir/.pin"
if pin_is_built "$stamp" "$pin"; then
    echo "$bin_dir"
    exit 0
fi
pin_need_go build.sh "see ../cluster/go.mod for the minimum version"
mkdir -p "$bin_dir"
export CGO_ENABLED=0

# build NAME DIR PACKAGE [LDFLAGS]: go build PACKAGE in DIR into $bin_dir/NAME unless it is there.
build() {
    if [ -x "$bin_dir/$1" ]; then
        return 0
    fi
    echo "build.sh: building $1 into $bin_dir" >&2
    (cd "$2" && go build -mod=readonly -trimpath -ldflags="${4:--s -w}" -o "$bin_dir/$1.tmp" "$3")
    mv "$bin_dir/$1.tmp" "$bin_dir/$1"
}

k8s_ldflags=$(pin_k8s_ldflags "$k8s_version")
build kube-scheduler "$here" k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags"
build kube-controller-manager "$here" k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"

kwok_dir=$(pin_module_dir sigs.k8s.io/kwok "$KWOK_VERSION")
build kwok "$kwok_dir" ./cmd/kwok \
    "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
jobset_dir=$(pin_module_dir sigs.k8s.io/jobset "$JOBSET_VERSION")
build jobset-controller "$jobset_dir" .
trainer_dir=$(pin_module_dir github.com/kubeflow/trainer/v2 "$TRAINER_VERSION")
build trainer-controller-manager "$trainer_dir" ./cmd/trainer-controller-manager

# The PodGroup CRD of scheduler-plugins, at the version Trainer's go.mod pins, so that both
# controllers can create the PodGroups of coscheduling runtimes.
if [ ! -f "$bin_dir/crds/scheduling.x-k8s.io_podgroups.yaml" ]; then
    sp_version=$(cd "$trainer_dir" && go list -m -f '{{.Version}}' sigs.k8s.io/scheduler-plugins)
    sp_dir=$(pin_module_dir sigs.k8s.io/scheduler-plugins "$sp_version")
    mkdir -p "$bin_dir/crds"
    cp "$sp_dir/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$bin_dir/crds/"
fi

echo "$pin" > "$stamp"
echo "$bin_dir"
