#!/bin/bash
# Session 20, call 2 (H200): the GEMV's wave fit (Q8_0: one stage or 2 rows a
# block where the default shape fits its waves badly). GPU tests of the GEMV
# (stages forced 1 and 2) and the fused decode; ls_bench_matmul --graph (v5 =
# the new default, v53 the old shape, v51 one stage, v52 2 rows); 8b Q8_0 and
# Q4_K_M decode, default beside LS_GEMV_WAVES=0, rounds interleaved.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*,decode fused*,cuda matmul: model-sized*" > $O/gpu-tests.txt 2>&1
echo "filtered GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
timeout 120 $B/ls_bench_matmul --graph > $O/bench-graph.txt 2>&1; grep -E "bound|Q8_0" $O/bench-graph.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b-q8.gguf --preset 8b --quant q8_0; el
for r in 1 2 3; do for w in x 0; do
  echo "8b Q8_0 Hello WAVES=$w r$r: $(LS_GEMV_WAVES=$w timeout 60 $L decode -m $M/8b-q8.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done; el
bn() { tail -1 | cut -d'|' -f2-3; }
for w in x 0; do
  echo "8b Q8_0 prompt 4000 WAVES=$w (prefill | decode): $(LS_GEMV_WAVES=$w timeout 90 $L bench -m $M/8b-q8.gguf --prompt-tokens 4000 -n 64 -c 4096 2>&1 | bn)" | tee -a $O/res.txt
done
rm -f $M/8b-q8.gguf
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for w in x 0; do
  echo "8b Q4_K_M Hello WAVES=$w r$r: $(LS_GEMV_WAVES=$w timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done; el
date -u
