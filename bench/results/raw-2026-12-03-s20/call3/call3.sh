#!/bin/bash
# Session 20, call 3 (H200): one graph for each run of resident layers
# (LS_LAYER_GRAPH=0: a graph a layer, as before) and the GEMV's wave fit
# (LS_GEMV_WAVES=0: the old shapes). GPU tests of the changed code first;
# ls_bench_matmul --graph (Q8_0 v5 = default, v53 the old shape, v51 one
# stage, v52 2 rows; the q|k|v launch's 6,144 rows as one shape); 8b Q4_K_M
# and Q8_0 decode, rounds interleaved after a warm-up.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 240 $B/ls_gpu_tests -tc="cuda pipeline*,cuda backend*,decode fused*,cuda matmul: gemv v5*,cuda kv*" > $O/gpu-tests.txt 2>&1
echo "filtered GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
timeout 120 $B/ls_bench_matmul --graph > $O/bench-graph.txt 2>&1; grep -E "^bound|q8_0" $O/bench-graph.txt | head -7; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
for q in q4_k_m q8_0; do
  timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant $q; el
  timeout 60 $L decode -m $M/8b.gguf -p Hello -n 64 --temp 0 > /dev/null 2>&1
  for r in 1 2 3; do for e in LS_X=1 LS_LAYER_GRAPH=0 LS_GEMV_WAVES=0; do
    [ $q = q4_k_m ] && [ $e = LS_GEMV_WAVES=0 ] && continue
    echo "8b $q Hello $e r$r: $(env $e timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
  done; done; el
  for e in LS_X=1 LS_LAYER_GRAPH=0; do
    echo "8b $q prompt 4000 $e (prefill | decode): $(env $e timeout 90 $L bench -m $M/8b.gguf --prompt-tokens 4000 -n 64 -c 4096 2>&1 | tail -1 | cut -d'|' -f2-3)" | tee -a $O/res.txt
  done
  [ $q = q4_k_m ] && env LS_X=1 timeout 60 $L decode -m $M/8b.gguf -p Hello -n 64 --temp 0 --trace $O/trace-8b.json --stats > $O/stats-8b.txt 2>&1
  rm -f $M/8b.gguf
done; el
date -u
