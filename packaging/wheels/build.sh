#!/usr/bin/env bash
# The release wheels (`make wheels`): for x86_64 and aarch64 one manylinux2014 (glibc 2.17)
# wheel each, tagged cp310-abi3 (CPython 3.10 and later), with the CUE evaluator (cuebridge/,
# cgo c-shared) and the loader's fast path (yamlext/fastyaml.c, libyaml compiled in) inside,
# and the sdist they are built from. Prints the folder holding them on its last line.
#
# Zig (the PyPI package ziglang) is the C compiler and linker of cgo and of the extension for
# both platforms, targeting glibc 2.17; Go cross-compiles (GOARCH). Everything is pinned: the
# Go modules in cuebridge/go.mod, the tools in requirements.txt (a venv of their own), libyaml
# in libyaml.sh. Each wheel is built from the unpacked sdist (so the sdist is proven complete)
# and must pass `auditwheel show` for its manylinux_2_17 tag. The result is cached in
# ~/.cache/tjc-wheels/wheels/<key>, the key a hash of the sdist's files, Go's version, the
# pinned tools and these scripts: a run with nothing changed only builds the sdist again.
#
#   PYTHON=python3 TJC_WHEEL_ARCHES="x86_64 aarch64" packaging/wheels/build.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
cache="${TJC_WHEELS_CACHE:-$HOME/.cache/tjc-wheels}"
arches="${TJC_WHEEL_ARCHES:-x86_64 aarch64}"
go="$(command -v go || echo /usr/local/go/bin/go)"
export PATH="$(dirname "$go"):$PATH"
mkdir -p "$cache/wheels"
exec 9>"$cache/.lock"
flock 9  # one build at a time (make wheels and the suite share the cache)

# --- the tools -----------------------------------------------------------------------------------
tools_key="$({ cat "$here/requirements.txt"; "$python" -VV; } | sha256sum | cut -c1-16)"
tools="$cache/tools/$tools_key"
if [ ! -f "$tools/.installed" ]; then
  rm -rf "$tools"
  "$python" -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    -r "$here/requirements.txt"
  touch "$tools/.installed"
fi
for arch in $arches; do  # the C compiler of each target: zig, for glibc 2.17
  printf '#!/bin/sh\nexec "%s" -m ziglang cc -target %s-linux-gnu.2.17 "$@"\n' \
    "$tools/bin/python" "$arch" > "$tools/bin/cc-$arch"
  chmod +x "$tools/bin/cc-$arch"
done
libyaml="$("$here/libyaml.sh" "$cache/src" | tail -n 1)"

# --- the sdist and the key -----------------------------------------------------------------------
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {  # run a step quietly, showing its output when it fails
  local log="$work/step.log"
  "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}
run env PIP_CONSTRAINT= "$tools/bin/python" -m build --no-isolation --sdist --outdir "$work" "$root"
sdist="$(ls "$work"/*.tar.gz)"
key="$("$tools/bin/python" - "$sdist" "$here/requirements.txt" "$here/build.sh" \
  "$here/libyaml.sh" "$("$go" version)" <<'EOF'
import hashlib, sys, tarfile
digest = hashlib.sha256()
with tarfile.open(sys.argv[1]) as sdist:
    for member in sorted(sdist.getmembers(), key=lambda m: m.name):
        if member.isfile():
            data = sdist.extractfile(member).read()
            digest.update(member.name.split("/", 1)[1].encode() + b"\0" + data + b"\0")
for path in sys.argv[2:5]:
    digest.update(open(path, "rb").read())
digest.update(sys.argv[5].encode())
print(digest.hexdigest()[:16])
EOF
)"
out="$cache/wheels/$key"
if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$arches" ]; then
  echo "$out"
  exit 0
fi

# --- a wheel per platform ------------------------------------------------------------------------
for arch in $arches; do
  case "$arch" in
    x86_64) goarch=amd64 ;;
    aarch64) goarch=arm64 ;;
    *) echo "build.sh: unknown platform $arch (x86_64 or aarch64)" >&2; exit 2 ;;
  esac
  mkdir -p "$work/$arch"
  tar -xzf "$sdist" -C "$work/$arch"
  tree="$(ls -d "$work/$arch"/*/)"
  platform="manylinux_2_17_$arch.manylinux2014_$arch"
  run env PIP_CONSTRAINT= TJC_REQUIRE_CUE=1 TJC_LIBYAML_SRC="$libyaml" \
    TJC_WHEEL_PLATFORM="$platform" CGO_ENABLED=1 GOOS=linux GOARCH="$goarch" \
    CC="$tools/bin/cc-$arch" LDSHARED="$tools/bin/cc-$arch -shared" \
    "$tools/bin/python" -m build --no-isolation --wheel --outdir "$work/dist" "$tree"
  wheel="$(ls "$work"/dist/*"-$platform.whl")"
  "$tools/bin/auditwheel" show --json "$wheel" > "$work/$arch.json"
  "$tools/bin/python" - "$work/$arch.json" "manylinux_2_17_$arch" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
if report.get("overall_tag") != sys.argv[2] or report.get("external_libs"):
    sys.exit(f"build.sh: auditwheel puts {report.get('wheel')} at {report.get('overall_tag')}, "
             f"not {sys.argv[2]}: {json.dumps(report)}")
EOF
done

rm -rf "$out"
mkdir -p "$out"
cp "$sdist" "$work"/dist/*.whl "$out/"
echo "$arches" > "$out/.complete"
for old in "$cache/wheels"/*/; do  # only the wheels of the current sources are kept
  [ "${old%/}" = "$out" ] || rm -rf "$old"
done
echo "$out"
