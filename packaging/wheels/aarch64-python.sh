#!/usr/bin/env bash
# An aarch64 CPython to run the aarch64 wheel with on an x86_64 machine: ./aarch64-python.sh
# DEST prints, on its last line, a `python3` that runs Debian's arm64 python3.11 under
# qemu-user. The interpreter and the libraries it needs are Debian's arm64 packages (bookworm),
# fetched with a private apt state and unpacked into DEST/<hash>/root (once); qemu-user, from
# Debian too, is installed with apt when missing. The `python3` is a script that starts
# qemu with itself as argv[0], so sys.executable is that script again and a subprocess of
# Python (the CUE evaluator's process) runs under qemu the same way.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suite=bookworm
packages=(python3.11-minimal libpython3.11-stdlib libstdc++6)
key="$(sha256sum "$0" | cut -c1-16)"
root="$1/$key/root"
python="$root/usr/local/bin/python3"

if ! command -v qemu-aarch64 >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    qemu-user >/dev/null
fi
if [ -f "$root/.complete" ]; then
  echo "$python"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
uri="$("$here/debian-archive.sh")"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/prefs"
touch "$work/status"  # nothing installed: apt fetches the whole dependency closure
echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" \
  > "$work/sources.list"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
     -o "Dir::Etc::PreferencesParts=$work/prefs" -o "Dir::Etc::Preferences=$work/prefs/none"
     -o "Dir::State::Lists=$work/lists" -o "Dir::State::status=$work/status"
     -o "Dir::Cache=$work/cache" -o "APT::Architecture=arm64" -o "APT::Architectures::=arm64"
     -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
"${apt[@]}" update >/dev/null
"${apt[@]}" install -y --download-only --no-install-recommends "${packages[@]}" >/dev/null
rm -rf "$root"
mkdir -p "$root/usr/local/bin"
for deb in "$work"/cache/archives/*.deb; do
  dpkg-deb -x "$deb" "$root"
done
cat > "$python" <<EOF
#!/bin/sh
exec qemu-aarch64 -L "$root" -0 "\$0" "$root/usr/bin/python3.11" "\$@"
EOF
chmod +x "$python"
touch "$root/.complete"
echo "$python"
