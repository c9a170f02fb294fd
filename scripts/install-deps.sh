#!/usr/bin/env bash
# Install what layerstream needs to build and test on Debian 12. Idempotent:
# packages already present are left alone. Uses sudo when not run as root.
# CUDA is optional: when nvcc is on the machine (/usr/local/cuda), the CUDA
# backend is built too; Debian's packages are not needed for it.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config git
  libasio-dev liburing-dev libconcurrentqueue-dev doctest-dev
  libcli11-dev nlohmann-json3-dev
  python3                    # scripts/check_floors.py, the first step of scripts/test.sh
  clang libclang-rt-14-dev   # libFuzzer for the GGUF reader's fuzz target
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
