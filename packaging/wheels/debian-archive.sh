#!/usr/bin/env bash
# The Debian archive this machine's apt is configured with (its first one that serves Debian,
# not the security archive), for libyaml.sh and aarch64-python.sh, which fetch from it with a
# private apt state: prints its URI.
set -euo pipefail
archive() {
  apt-get indextargets --format '$(ORIGIN) $(REPO_URI)' 'Created-By: Packages' \
    | awk '$1 == "Debian" && $2 !~ /security/ {print $2; exit}'
}
uri="$(archive)"
if [ -z "$uri" ]; then  # no package lists yet
  apt-get update -qq >/dev/null
  uri="$(archive)"
fi
[ -n "$uri" ] || { echo "debian-archive.sh: no Debian archive in apt's sources" >&2; exit 1; }
echo "$uri"
