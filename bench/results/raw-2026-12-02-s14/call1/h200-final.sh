#!/bin/bash
# For the next session's first H200 call (prepared in session 13, not yet
# run): issue 20's lines on the H200 with the session-13 binary, beside
# llama.cpp on the same files: the bound (ls_bench_matmul --graph: the D2D
# copy, then each GEMV form as decode now runs it), 8b Q4_K_M and Q8_0
# decode, after 16k tokens, and the 70b Q4_K_M fully resident last (the
# disk holds one 70b: the 8b files go first). Carry .gpubin (layerstream and
# ls_bench_matmul, about 11.5 MB xz) and .llama/lcpk.txz (33 MB): the tree
# plus both must stay under 64 MiB. About 6 minutes.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B && tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk
timeout 100 $B/ls_bench_matmul --graph 2>&1 | grep -E "bound|graph" | tee $O/bench-graph.txt; el
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in q4_k_m q8_0; do
  for r in 1 2 3; do echo "layerstream 8b $q round $r: $(timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 90 $LB/llama-bench -m $M/8b-$q.gguf -ngl 99 -p 0 -n 256 -r 3 -fa 0,1 2>&1 | grep -E "tg256|error"
done 2>&1 | tee $O/tg.txt; el
for r in 1 2 3; do echo "layerstream prompt 16000 round $r: $(timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"; done | tee $O/ctx.txt
LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 150 $LB/llama-batched-bench -m $M/8b-q4_k_m.gguf -ngl 99 -c 16448 -b 2048 -ub 512 -fa -npp 16000 -ntg 64 -npl 1 2>&1 | grep -E "^\|" | tee -a $O/ctx.txt; el
rm -f $M/8b-*.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do echo "layerstream 70b resident round $r: $(timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done | tee $O/70b.txt
LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 120 $LB/llama-bench -m $M/70b.gguf -ngl 99 -p 0 -n 128 -r 2 -fa 0,1 2>&1 | grep -E "tg128|error" | tee -a $O/70b.txt; el
date -u
cd $OUT && tar cJf l.txz l
