#!/usr/bin/env bash
# What the training tests of `tjc run --local` run with (idempotent; cached):
#  - a venv with the pinned CPU wheels of requirements.txt (JAX, XGBoost, mpi4py) in
#    ~/.cache/tjc-train/<hash of requirements.txt>;
#  - Debian's OpenMPI (mpirun) and Debian's CPU-only PyTorch for /usr/bin/python3: PyPI's
#    torch wheels for Linux x86_64 do not even import without the CUDA libraries (several GB).
# Prints the venv's python on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
hash="$(sha256sum "$here/requirements.txt" | cut -c1-16)"
venv="${TJC_TRAIN_CACHE:-$HOME/.cache/tjc-train}/$hash"

if [ ! -f "$venv/.installed" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  touch "$venv/.installed"
fi

missing=()
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
/usr/bin/python3 -c "import torch.distributed" >/dev/null 2>&1 || missing+=(python3-torch)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
echo "$venv/bin/python"
