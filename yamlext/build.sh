#!/usr/bin/env bash
# Builds the loader's native fast path (fastyaml.c, see compiler/io/fastload.py) and the
# emitter's (fastemit.c, compiler/io/emit.py) for a checkout: ./build.sh OUT PYTHON. Needs a
# C compiler and libyaml's headers and static library (Debian's libyaml-dev, installed here
# when missing). The package build (setup.py) compiles the same files into the wheel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
python="${2:-python3}"

if [ ! -f /usr/include/yaml.h ] || ! command -v cc >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    libyaml-dev gcc libc6-dev >/dev/null
fi
include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
static="$(cc -print-file-name=libyaml.a)"
[ -f "$static" ] || static="-lyaml"  # no static library: link the shared one
mkdir -p "$(dirname "$out")"
cc -O2 -Wall -Wextra -Werror -shared -fPIC -I"$include" "$here/fastyaml.c" "$here/fastemit.c" $static \
  -o "$out.tmp"
mv "$out.tmp" "$out"
