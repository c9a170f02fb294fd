#!/bin/bash
# Session 18, call 2 (H200): decode attention with warps that own heads
# (kOwn: G 4 and 8; LS_ATTENTION_OWN=0 is the old form). GPU tests under
# both forms, ls_bench_attention under both, then interleaved decodes:
# 8b Q4_K_M (-n 256), 8b after a 16,000-token prompt, 70b Q4_K_M (-n 128).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for own in 1 0; do
  LS_ATTENTION_OWN=$own timeout 120 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend: logits*,cuda backend: a 300*,cuda attention*" > $O/gpu-tests-own$own.txt 2>&1; echo "own=$own tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests-own$own.txt | tail -2
done; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
for own in 1 0; do LS_ATTENTION_OWN=$own timeout 90 $B/ls_bench_attention 5 > $O/bench-attention-own$own.txt 2>&1; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
# own=1s: kOwn with 32 splits of at least 8 positions up to 2048 (LS_ATTENTION_SHORT=32,8).
run_ab() {  # model tokens rounds tag
  for r in $(seq $3); do for own in 1 0 1s; do
    sh=""; [ $own = 1s ] && sh=32,8
    echo "$4 own=$own round $r: $(LS_ATTENTION_SHORT=$sh LS_ATTENTION_OWN=${own%s} timeout 80 $L decode -m $1 -p Hello -n $2 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/$4.txt
  done; done; el; }
run_ab $M/8b.gguf 256 3 8b
for own in 1 0; do
  LS_ATTENTION_OWN=$own timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/8b-16k-own$own.txt 2>&1
  echo "8b 16k own=$own: $(tail -1 $O/8b-16k-own$own.txt | cut -d'|' -f2-3)"
done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
run_ab $M/70b.gguf 128 3 70b
# ncu: the 70b's Q6_K GEMVs at n_tok 1 (the down projection of 40 layers: 2048 blocks; the output
# head: 32064), three launches after the first two.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 150 $NCU --clock-control none --kernel-name-base demangled -k 'regex:gemv_q8_v5<[^,]*14, 1, 4, 2' --launch-skip 2 --launch-count 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --print-details all $L decode -m $M/70b.gguf -p Hello -n 3 --temp 0 > $O/ncu-q6k-70b.txt 2>&1; echo "ncu rc $? $(grep -c 'Grid Size' $O/ncu-q6k-70b.txt)"; el
date -u
