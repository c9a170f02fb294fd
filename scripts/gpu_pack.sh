#!/usr/bin/env bash
# Build the binaries a GPU-machine call runs (sm_90 machine code) and pack
# them, stripped, into .gpubin/bin.txz, with the commit they were built at in
# .gpubin/bin.commit. The call carries .gpubin/bin.txz (run's carry) and
# unpacks it there (the scripts under bench/results/raw-*/ do). .gpubin/ is
# kept out of git: add it to .git/info/exclude once.
# Usage: scripts/gpu_pack.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
targets=(layerstream ls_bench_cpu_attention ls_bench_cpu_matmul ls_gpu_tests ls_unit_tests ls_bench_matmul
         ls_bench_attention ls_bench_kv_read ls_bench_grid_barrier)
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# The architecture every time: scripts/test.sh sets 90-virtual (PTX only) on
# machines without a GPU, which would not run there.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DLS_CUDA_CHECK_ONLY=OFF \
  "${launcher[@]}" > /dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
grep -qx '.gpubin/' .git/info/exclude 2>/dev/null || echo '.gpubin/' >> .git/info/exclude
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in "${targets[@]}"; do cp "$build/$t" "$tmp/"; done
strip "$tmp"/*
mkdir -p .gpubin
(cd "$tmp" && XZ_OPT="-9 -T$(nproc)" tar -cJf - ./*) > .gpubin/bin.txz
git rev-parse HEAD > .gpubin/bin.commit
git diff --quiet HEAD -- . ':(exclude).gpubin' || echo "gpu_pack.sh: note: built from a tree with uncommitted changes"
ls -la .gpubin/bin.txz
