#!/usr/bin/env bash
# Check the floor plan, build layerstream and run every test: unit tests (CPU), GPU tests (they
# print SKIPPED without a CUDA device), the QEMU NVMe tests (tests/qemu/,
# CTest label qemu; skipped when QEMU cannot be installed), the GGUF
# reader's and the safetensors parser's fuzzers for 60 s in all, and the unit
# tests again under AddressSanitizer + UBSan. (ThreadSanitizer:
# scripts/sanitize.sh tsan, about 6 minutes of tests on 2 cores, run by hand.)
# Usage: scripts/test.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=$(nproc)
# The floor plan (ARCHITECTURE.md): under a second, so before the build.
python3 scripts/check_floors.py
# ccache when the machine has it: unchanged files are cache hits on the next run.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" -j "$jobs" --output-on-failure
if [ -x "$build/ls_gpu_tests" ]; then
  # The GPU tests' own summary (a visible SKIPPED line on machines without a GPU).
  "$build/ls_gpu_tests" || exit 1
fi
scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
[ "${SKIP_ASAN:-0}" = 1 ] || scripts/sanitize.sh asan
