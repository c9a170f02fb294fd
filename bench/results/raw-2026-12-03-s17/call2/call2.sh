#!/bin/bash
# Session 17, call 2 (H200): the tree after call 1 (decode attention stages
# a short split's rows in shared memory; the L2 prefetch hints, the cluster
# merge and GEMV v8 removed). GPU tests of the paths touched; the bound;
# 8b and 70b Q4_K_M decode, stage on / off (LS_ATTENTION_STAGE=0)
# interleaved; 8b Q8_0; 8b after a 16k prompt; then ncu of one decode
# attention launch (8b at ~130 positions, 70b the same) with stall reasons
# per source line, to see where its ~10-17 us go.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda ops: argmax*,cuda kv paged*,decode fused*,cuda backend*,cuda matmul: gemv*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt; el
# ncu: the 3rd decode step's first attention launch after a 128-token prompt
ncu_att() { timeout 120 $NCU --clock-control none -k regex:attention_decode --launch-skip $2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section SourceCounters --import-source no --print-details all $L bench -m $3 --prompt-tokens 128 -n 6 > $O/ncu-att-$1.txt 2>&1; echo "ncu $1 rc $?"
  timeout 120 $NCU --clock-control none -k regex:attention_decode --launch-skip $2 --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv $L bench -m $3 --prompt-tokens 128 -n 6 > $O/ncu-att-$1-sass.csv 2>&1; echo "ncu sass $1 rc $? $(wc -l < $O/ncu-att-$1-sass.csv)"; }
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2 3; do for st in 0 1; do
  echo "8b stage=$st round $r: $(LS_ATTENTION_STAGE=$st timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt
done; done; el
for r in 1 2; do echo "8b splits=fixed round $r: $(LS_ATTENTION_SPLITS=fixed timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt; done
ncu_att 8b 64 $M/8b.gguf; el
rm -f $M/8b.gguf
timeout 90 $L synth -q -o $M/8b-q8.gguf --preset 8b --quant q8_0; el
for r in 1 2; do echo "8b q8_0 round $r: $(timeout 60 $L decode -m $M/8b-q8.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b-q8.txt; done; el
rm -f $M/8b-q8.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do for st in 0 1; do
  echo "70b stage=$st round $r: $(LS_ATTENTION_STAGE=$st timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
done; done; el
for r in 1 2; do echo "70b splits=fixed round $r: $(LS_ATTENTION_SPLITS=fixed timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt; done
ncu_att 70b 160 $M/70b.gguf; el
rm -f $M/70b.gguf
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do echo "8b 16k round $r: $(timeout 150 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)" | tee -a $O/8b-16k.txt; done; el
date -u
