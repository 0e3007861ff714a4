#!/usr/bin/env bash
# libyaml's source for the release wheels (build.sh): ./libyaml.sh DEST prints the unpacked
# source tree DEST/libyaml-VERSION on its last line, fetching it once. The source is Debian's
# libyaml source package (the upstream tarball it carries, checked against the SHA-256 pinned
# here), downloaded with apt-get through the Debian archive this machine's apt already uses,
# with a private source list and state (the system's apt configuration is not changed).
set -euo pipefail
dest="$1"
version=0.2.5
package="libyaml=$version-1"
suite=bookworm
orig="libyaml_$version.orig.tar.gz"
sha256=fa240dbf262be053f3898006d502d514936c818e422afdcf33921c63bed9bf2e
tree="$dest/libyaml-$version"

if [ -f "$tree/.complete" ]; then
  echo "$tree"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
uri="$("$(dirname "$0")/debian-archive.sh")"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" \
  > "$work/sources.list"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root")
"${apt[@]}" update >/dev/null
(cd "$work/src" && "${apt[@]}" source --download-only "$package" >/dev/null)
echo "$sha256  $work/src/$orig" | sha256sum --check --quiet
mkdir -p "$dest"
rm -rf "$tree"
tar -xzf "$work/src/$orig" -C "$dest"
touch "$tree/.complete"
echo "$tree"
