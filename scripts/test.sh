#!/usr/bin/env bash
# Check the floor plan, build layerstream and run every test: unit tests (CPU), GPU tests (they
# print SKIPPED without a CUDA device), the QEMU NVMe tests (tests/qemu/,
# CTest label qemu; skipped when QEMU cannot be installed), the GGUF
# reader's and the safetensors parser's fuzzers for 60 s in all, and the unit
# tests again under AddressSanitizer + UBSan, built with clang. (ThreadSanitizer:
# scripts/sanitize.sh tsan, about 6 minutes of tests on 2 cores, run by hand.)
# Usage: scripts/test.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=$(nproc)
# The floor plan (docs/architecture.md): under a second, so before the build.
python3 scripts/check_floors.py
# ccache when the machine has it: unchanged files are cache hits on the next run.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# CUDA device code: the architecture is passed every time, so that a value
# cached in $build by one mode never leaks into the other. Without a CUDA
# device nothing built here runs on one, so compile the device code to PTX
# only (90-virtual): every CUDA source still goes through nvcc (front end,
# templates, device code), but ptxas, about half of the CUDA compile time, is
# skipped. With a device: sm_90 machine code (the default). LS_CUDA_ARCH
# overrides both (e.g. LS_CUDA_ARCH=90 to check ptxas on a machine without one).
cuda=()
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null 2>&1; then
  if [ -n "${LS_CUDA_ARCH:-}" ]; then
    arch=$LS_CUDA_ARCH
  elif nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    arch=90
  else
    arch=90-virtual
    echo "test.sh: no CUDA device: device code compiled to PTX only (CMAKE_CUDA_ARCHITECTURES=90-virtual; LS_CUDA_ARCH=90 for sm_90 code)"
  fi
  # PTX only: nothing built runs on a GPU, so CUDA code is only checked to
  # compile, without optimisation (LS_CUDA_CHECK_ONLY; set either way, so
  # that a cached value never leaks into a build that runs kernels).
  check_only=OFF
  [[ "$arch" == *virtual* ]] && check_only=ON
  cuda=(-DCMAKE_CUDA_ARCHITECTURES="$arch" -DLS_CUDA_CHECK_ONLY="$check_only")
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" "${launcher[@]}"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" -j "$jobs" --output-on-failure
if [ -x "$build/ls_gpu_tests" ]; then
  # The GPU tests' own summary (a visible SKIPPED line on machines without a GPU).
  "$build/ls_gpu_tests" || exit 1
fi
scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
[ "${SKIP_ASAN:-0}" = 1 ] || scripts/sanitize.sh asan
