#!/bin/bash
# Session 11, call 4: issue 20's figures with this session's binary beside
# llama.cpp (c392e50) on the same files: resident 8b Q4_K_M and Q8_0 against
# each A/B switch (LS_POLL_WAIT=0: the actors sleep between steps as before;
# LS_GEMV_VERSION=2: f32-x GEMVs), the stall table (gpu-compute now counts
# the head), a trace of 32 tokens, 16k context; all GPU tests; the 70b
# Q4_K_M fully resident if time is left.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L
tar -xJf .gpubin/bin.txz -C $B && tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk
BIN=$B OUT=$O ROUNDS=2 MODELS=$M LLAMA_BIN=$LB timeout 330 scripts/gpu_decode_ab.sh q4_k_m q8_0; el
export LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH
timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 32 --temp 0 --no-display-prompt --trace $O/trace-8b.json > /dev/null 2>&1; xz -T4 $O/trace-8b.json
echo "16k:"; timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 32 -c 16384 > $O/bench16k.txt 2>&1; grep -E "^\| [0-9]" $O/bench16k.txt; el
timeout 300 $B/ls_gpu_tests > $O/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "test cases|assertions|FAILED|ERROR" $O/gpu_tests.log | head; el
rm -f $M/8b-q8_0.gguf
if [ $(($(date +%s) - t0)) -lt 330 ]; then
  timeout 100 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
  for r in 1 2; do echo -n "layerstream 70b resident: "; timeout 60 $L decode -m $M/70b.gguf -p Hello -n 64 --temp 0 --no-display-prompt 2>&1 >/dev/null | grep -o "generated.*tok/s\|error.*"; done; el
  timeout 120 $LB/llama-bench -m $M/70b.gguf -ngl 99 -p 0 -n 64 -r 2 2>&1 | grep -E "tg|error"; el
fi
tar -cJf $OUT/s11call4.txz -C $O . ; el
