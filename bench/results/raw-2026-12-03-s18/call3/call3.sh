#!/bin/bash
# Session 18, call 3 (H200): warps that own heads only where every split is
# short (attention_decode_short; call 2 found them 25-30 % slower at 4k-16k).
# GPU tests (both forms forced at every split length), ls_bench_attention,
# then the default against LS_ATTENTION_OWN=0, interleaved: 8b Q4_K_M
# (-n 256), 8b after a 16,000-token prompt, 70b Q4_K_M (-n 128).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions|FAILED|ERROR" $O/gpu-tests.txt | tail -4; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
timeout 90 $B/ls_bench_attention 5 > $O/bench-attention.txt 2>&1; grep -E "ctx" $O/bench-attention.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
run_ab() {  # model tokens rounds tag
  for r in $(seq $3); do for own in 1 0; do
    echo "$4 own=$own round $r: $(LS_ATTENTION_OWN=$own timeout 80 $L decode -m $1 -p Hello -n $2 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/$4.txt
  done; done; el; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
run_ab $M/8b.gguf 256 3 8b
for r in 1 2; do for own in 1 0; do
  echo "8b 16k own=$own round $r: $(LS_ATTENTION_OWN=$own timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)" | tee -a $O/8b-16k.txt
done; done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
run_ab $M/70b.gguf 128 3 70b
date -u
