# Shared by the scripts that build pinned Go tools into a cache dir (sourced, not run):
# e2e/cluster/build.sh, e2e/controlplane/build.sh, e2e/tools/build.sh, parity/oracle/build.sh
# and bench/kubeconform.sh. Each keeps its own pin string, cache dir and flag; this file holds
# what they do alike. POSIX sh.

# pin_mod_version MODULE_REGEX GOMOD: the version of MODULE in GOMOD's require lines
# (a tab or "require ", the module, a space, the version); empty when it is not there.
pin_mod_version() {
    sed -n "s#^[[:space:]]*\\(require \\)\\{0,1\\}$1 \\(v[^ ]*\\).*#\\2#p" "$2" | head -n 1
}

# pin_cache_dir OVERRIDE SUBDIR PIN: OVERRIDE when it is set, else
# ${XDG_CACHE_HOME:-~/.cache}/SUBDIR/PIN.
pin_cache_dir() {
    if [ -n "$1" ]; then
        echo "$1"
    else
        echo "${XDG_CACHE_HOME:-$HOME/.cache}/$2/$3"
    fi
}

# pin_print_flag FLAG WHAT ARGS...: with FLAG alone, print WHAT and exit 0; with any other
# argument, print the usage and exit 2; with none, return.
pin_print_flag() {
    pin_flag=$1
    pin_what=$2
    shift 2
    if [ "${1:-}" = "$pin_flag" ] && [ $# -eq 1 ]; then
        echo "$pin_what"
        exit 0
    elif [ $# -gt 0 ]; then
        echo "usage: $0 [$pin_flag]" >&2
        exit 2
    fi
}

# pin_is_built STAMP PIN [BINARY...]: true when STAMP holds PIN and every BINARY is executable.
pin_is_built() {
    pin_stamp=$1
    pin_want=$2
    shift 2
    for pin_file in "$@"; do
        [ -x "$pin_file" ] || return 1
    done
    [ -f "$pin_stamp" ] && [ "$(cat "$pin_stamp")" = "$pin_want" ]
}

# pin_need_go SCRIPT HINT: exit 1 with a message when Go is not on PATH.
pin_need_go() {
    if ! command -v go >/dev/null 2>&1; then
        echo "$1: go not found; install Go ($2)" >&2
        exit 1
    fi
}

# pin_k8s_ldflags VERSION: the linker flags that make a Kubernetes component report VERSION
# (/version, --version) as a release build does.
pin_k8s_ldflags() {
    pin_minor=${1#v1.}
    pin_minor=${pin_minor%%.*}
    printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=$1"
    printf '%s' " -X k8s.io/component-base/version.gitMajor=1"
    printf '%s' " -X k8s.io/component-base/version.gitMinor=$pin_minor"
    printf '%s\n' " -X k8s.io/component-base/version.gitTreeState=clean"
}

# pin_module_dir MODULE VERSION: download the module (checked against the checksum database)
# and print its directory in the module cache.
pin_module_dir() {
    go mod download -json "$1@$2" | sed -n 's#^[[:space:]]*"Dir": "\(.*\)",*$#\1#p'
}
