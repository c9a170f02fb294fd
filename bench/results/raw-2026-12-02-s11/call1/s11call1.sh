#!/bin/bash
# Session 11, call 1: (A) resident 8b decode against each A/B switch of the
# decode path (the argmax-only greedy steps were never run on a GPU), the
# stall table; (B) CPU attention of one 70b layer at 1k-16k with and without
# the prefetch of each thread's next block (issue 14's last line), twice;
# (C) the Q4_K/Q6_K GEMVs of one 8b layer under ncu's memory and warp-stall
# sections (issue 20); (D) all GPU tests.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200
cat /sys/kernel/mm/transparent_hugepage/enabled
tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
# A.
BIN=$B OUT=$O ROUNDS=2 MODELS=$M timeout 300 scripts/gpu_decode_ab.sh q4_k_m q8_0; el
# B. (the GPU idle: nothing else runs)
for r in 1 2; do
  timeout 120 $B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --next 1,0 2>&1 | tee $O/attention-$r.txt | grep -E "^ +[0-9]"
done; el
# C. one layer's GEMVs (graphs off: each kernel its own launch), after 40 tokens.
LS_CUDA_GRAPHS=0 timeout 150 /usr/local/cuda/bin/ncu --clock-control none -k regex:gemv \
  --launch-skip 1300 --launch-count 8 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section LaunchStats --section Occupancy \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 48 --temp 0 --no-display-prompt > $O/ncu-gemv.txt 2> $O/ncu.err
echo "ncu rc=$?"; grep -E "gemv_q8_v5|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Block Size|Grid Size|Registers|Stall|Warp Cycles Per Issued" $O/ncu-gemv.txt | head -80; el
# D.
timeout 330 $B/ls_gpu_tests > $O/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "test cases|assertions|FAILED|ERROR" $O/gpu_tests.log | head; el
tar -cJf $OUT/s11call1.txz -C $O . ; el
