#!/bin/bash
# Session 16, call 1 (H200): the Q6_K GEMV with unsigned quants (the - 32
# taken from the dot) against the session-15 binary (*_old), same call:
# GPU tests of the GEMV and decode paths, ls_bench_matmul --graph at the 8b
# and 70b shapes (old, new, old, new), 8b Q4_K_M / Q8_0 decode and the 70b
# Q4_K_M resident decode, old and new alternating.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 240 $B/ls_gpu_tests -tc="cuda matmul: gemv*,cuda matmul: every gemv*,decode fused*" 2>&1 | tail -40 > $O/gpu-tests.txt; el
grep -E "test cases|assertions|ERROR|FAILED" $O/gpu-tests.txt | head -20
for r in 1; do for v in _old ""; do
  echo "== bench$v 8b round $r"; timeout 100 $B/ls_bench_matmul$v --graph 2>&1 | grep -E "bound|graph x20"
  echo "== bench$v 70b round $r"; timeout 150 $B/ls_bench_matmul$v --graph 70b 2>&1 | grep -E "bound|graph x20"
done; done > $O/bench-graph.txt 2>&1; el
grep -E "==|q6_K|bound" $O/bench-graph.txt | cut -c1-60,150-260
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in q4_k_m q8_0; do timeout 90 $B/layerstream synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
for q in q4_k_m q8_0; do for r in 1 2 3; do for v in _old ""; do
  echo "8b $q layerstream$v round $r: $(timeout 60 $B/layerstream$v decode -m $M/8b-$q.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done; done 2>&1 | tee $O/tg.txt; el
for v in _old ""; do timeout 60 $B/layerstream$v decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 2>/dev/null | md5sum; done > $O/text.txt
for r in 1; do for v in _old ""; do echo "16k layerstream$v round $r: $(timeout 120 $B/layerstream$v bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"; done; done | tee $O/ctx.txt; el
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# Every kernel of a short decode, timed alone by ncu (cache flushed before each).
ncu_run() { timeout 150 $NCU --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --log-file $O/$1 $B/layerstream decode -m $2 -p Hello -n 3 --temp 0 > /dev/null 2>&1; echo "ncu $1 rc $? $(wc -l < $O/$1)"; }
ncu_run ncu-8b.csv $M/8b-q4_k_m.gguf; el
rm -f $M/8b-*.gguf
timeout 170 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do for v in _old ""; do echo "70b layerstream$v round $r: $(timeout 80 $B/layerstream$v decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done; done | tee $O/70b.txt; el
for v in _old ""; do timeout 80 $B/layerstream$v decode -m $M/70b.gguf -p Hello -n 32 --temp 0 2>/dev/null | md5sum; done >> $O/text.txt
ncu_run ncu-70b.csv $M/70b.gguf; el
cat $O/text.txt; date -u
