#!/usr/bin/env bash
# Install what layerstream needs to build and test on Debian 12. Idempotent:
# packages already present are left alone. Uses sudo when not run as root.
# CUDA is optional: when nvcc is on the machine (/usr/local/cuda), the CUDA
# backend is built too; Debian's packages are not needed for it.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev liburing-dev libconcurrentqueue-dev doctest-dev  # Boost.Asio + Beast: control plane, server
  libcli11-dev nlohmann-json3-dev
  python3                    # scripts/check_floors.py, the first step of scripts/test.sh
  curl                       # tests/serve/: the server's endpoints and raw SSE frames
  clang libclang-rt-14-dev   # libFuzzer for the fuzzers; the ASan build (scripts/sanitize.sh)
)
# For the server's tests (tests/serve/), not the build: headless Chromium for
# the chat page, Node and npm for the official openai client. Their tests
# print SKIPPED without them, so a failed install here only warns. Node is
# looked for as a command: a machine may have it from elsewhere (NodeSource's
# nodejs bundles npm, and conflicts with Debian's npm package).
optional=(chromium)
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || optional+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
missing_optional=()
for p in "${optional[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_optional+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present (and the test tools: chromium, node, npm)"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  echo "install-deps: installing the test tools ${missing_optional[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" ||
    echo "install-deps: warning: could not install ${missing_optional[*]}: their tests will be SKIPPED"
fi
