#!/bin/bash
# Session 57, call 4 (an H200 only: needs_h200): issue 20's H200 lines, last
# measured in sessions 21 and 50, with this session's questions.
# (1) ls_bench_grid_barrier once: the PDL model's ceiling on this machine;
# (2) session 56's call 4: the 8b Q4_K_M and Q8_0 beside the carried
#     llama-bench, two rounds; after a 16k prompt; the GEMVs alone; ncu if
#     time is left (its LIMIT less 40 s for (3));
# (3) the 8b Q4_K_M with the norms, attention, SwiGLU left out (LS_STEP_OMIT).
# Run: OUT=$OUT LIMIT=330 bash bench/results/raw-2026-12-07-s57/call4/run.sh $PWD (timeout 360;
# carry .gpubin/bin.txz and .gpubin/llama-bench.txz, model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-330}
mkdir -p /tmp/b && tar -xJf "$R/.gpubin/bin.txz" -C /tmp/b ./ls_bench_grid_barrier
timeout 30 /tmp/b/ls_bench_grid_barrier > $OUT/barrier.txt 2>&1; echo "barrier rc=$?"
grep -E "^bound|^\|" $OUT/barrier.txt
OUT=$OUT LIMIT=$((LIMIT - SECONDS - 40)) bash "$R/bench/results/raw-2026-12-07-s56/call4/run.sh" "$R"
O=$OUT/r2; mkdir -p $O
. "$R/scripts/gpu_call_lib.sh"
AB="LS_STEP_OMIT=0;LS_STEP_OMIT=1;LS_STEP_OMIT=2;LS_STEP_OMIT=4;LS_STEP_OMIT=7"
ab_runs omit 1 -m $M/8b-q4_k_m.gguf -n 128
(cd $OUT && tar -czf out2.tgz r2 && rm -rf r2)
