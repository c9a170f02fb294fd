#!/bin/bash
# For the next session's first call (any machine; an H200 above all): the
# persistent step kernel's first question (docs/status.md, issue 20's plan,
# step 1), then issue 20's lines beside llama.cpp where the call is an H200.
# (1) ls_bench_grid_barrier: the 8b's step modelled as streams and chains,
#     as PDL kernels in one graph against one cooperative kernel with grid
#     barriers (with and without an L2 prefetch through them); twice; the
#     outputs as $OUT/barrier-*.txt;
# (2) on an H200, with time left, session 56's call 4 (the 8b Q4_K_M and
#     Q8_0 beside the carried llama-bench, after 16k, the GEMVs alone, ncu),
#     its output in $OUT/out.tgz.
# Run: OUT=$OUT LIMIT=400 bash bench/results/raw-2026-12-07-s56/next/run.sh $PWD (timeout 430;
# carry .gpubin/bin.txz and .gpubin/llama-bench.txz, model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-400}
B=/tmp/b; mkdir -p $B && tar -xJf "$R/.gpubin/bin.txz" -C $B ./ls_bench_grid_barrier || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2; do
  timeout 60 $B/ls_bench_grid_barrier > $OUT/barrier-$i.txt 2>&1; echo "grid barrier run $i rc=$?"
  grep -E "^bound|^persistent|^\|" $OUT/barrier-$i.txt
done
echo "--- ${SECONDS}s"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $((LIMIT - SECONDS)) -ge 220 ]; then
  OUT=$OUT LIMIT=$((LIMIT - SECONDS)) bash "$R/bench/results/raw-2026-12-07-s56/call4/run.sh" "$R"
fi
ls -la $OUT
