#!/bin/bash
# Session 14, call 2 (H200): the fused decode layer (GEMV epilogues: no
# norm or SwiGLU kernels) against LS_DECODE_FUSION=0 in the same call:
# GPU tests of the new code, then 8b Q4_K_M / Q8_0 decode, after 16k, and
# the 70b Q4_K_M resident; the bound from ls_bench_matmul.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="gemv epilogue*,cuda backend*,decode fused*" 2>&1 | tail -60 > $O/gpu-tests.txt; el
grep -E "fused vs|deferred vs|test cases|assertions|ERROR|FAILED" $O/gpu-tests.txt | head -40
timeout 100 $B/ls_bench_matmul --graph 2>&1 | grep -E "bound" | head -2 | tee $O/bound.txt; el
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in q4_k_m q8_0; do
  for r in 1 2 3; do for f in 1 0; do
    echo "8b $q fusion=$f round $r: $(LS_DECODE_FUSION=$f timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  done; done
done 2>&1 | tee $O/tg.txt; el
LS_DECODE_FUSION=1 timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 2>/dev/null | md5sum > $O/text.txt
LS_DECODE_FUSION=0 timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 2>/dev/null | md5sum >> $O/text.txt
for r in 1 2; do for f in 1 0; do echo "16k fusion=$f round $r: $(LS_DECODE_FUSION=$f timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"; done; done | tee $O/ctx.txt; el
rm -f $M/8b-*.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for f in 1 0; do echo "70b fusion=$f round $r: $(LS_DECODE_FUSION=$f timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done; done | tee $O/70b.txt; el
date -u
