#!/bin/bash
# Session 13, call 1: the committed default (GEMV v7 for the K-quants) as
# users run it, v6 beside it (llama.cpp does not fit in the carry beside
# these four binaries: a later call); one decode token kernel by kernel under ncu (graphs off);
# the v7 GEMVs' warp stalls; the two attention opt-ins (fold, prefetch) in
# ls_bench_attention and in the attention GPU tests.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b13; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in q4_k_m q8_0; do for r in 1 2 3; do for sw in default LS_GEMV_VERSION=6; do
  e=(); [ $sw = default ] || e=($sw)
  echo "8b $q round $r $sw: $(env "${e[@]}" timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done; done | tee $O/ab.txt; el
timeout 100 $B/ls_bench_matmul --graph 2>&1 | grep -E "bound|graph" > $O/bench-graph.txt; el
timeout 100 $B/ls_bench_attention 5,6,7 2>&1 | tee $O/bench-attention.txt | tail -30; el
(cd /tmp && timeout 150 $B/ls_gpu_tests -tc="*attention*" 2>&1 | tail -4) | tee $O/gpu-attention.txt; el
for sw in default LS_ATTENTION_FOLD=1 LS_ATTENTION_PREFETCH=1; do for r in 1 2; do
  e=(); [ $sw = default ] || e=($sw)
  echo "8b q4_k_m r$r $sw: $(env "${e[@]}" timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 4096 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
done; done | tee $O/opt-ins.txt; el
LS_CUDA_GRAPHS=0 timeout 150 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2600 --launch-count 700 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 8 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; python3 bench/results/raw-2026-12-02-s10/ncu_table.py $O/ncu-q4km.csv | tee $O/ncu-table.txt | head -30; el
LS_CUDA_GRAPHS=0 timeout 150 /usr/local/cuda/bin/ncu --clock-control none -k regex:gemv \
  --launch-skip 1300 --launch-count 8 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 48 --temp 0 --no-display-prompt > $O/ncu-gemv.txt 2> $O/ncu2.err
echo "ncu rc=$?"; el
date -u
cd $OUT && tar cJf l.txz l
