#!/bin/bash
# Session 56, call 4 (for an H200, the issue's machine): issue 20's lines
# beside llama.cpp, with the llama-bench that call 2 built (c392e5094,
# static, sm_90; carried as .gpubin/llama-bench.txz, never committed), so no
# build: the 8b Q4_K_M and Q8_0, `layerstream bench -n 128` (defaults)
# alternated with `llama-bench -p 0 -n 128 -ngl 99 -r 3` on the same file,
# two rounds; after a 16k prompt; ls_bench_matmul --graph; ncu of one
# decode step if time is left.
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-07-s56/call4/run.sh $PWD (timeout 330;
# carry .gpubin/bin.txz and .gpubin/llama-bench.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
mkdir -p /tmp/lc && tar -xJf "$R/.gpubin/llama-bench.txz" -C /tmp/lc; LB=/tmp/lc/llama-bench
for q in q4_k_m q8_0; do
  timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
done; el
for q in q4_k_m q8_0; do
  for r in 1 2; do
    left 40 || break
    timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-$r.txt 2>&1
    echo "layerstream 8b $q round $r: $(rate $O/b8-$q-$r.txt)"; grep "device memory bound" $O/b8-$q-$r.txt | cut -c1-120
    timeout 60 $LB -m $M/8b-$q.gguf -p 0 -n 128 -ngl 99 -r 3 > $O/lc-$q-$r.txt 2>&1
    echo "llama.cpp 8b $q round $r: $(grep -E 'tg128' $O/lc-$q-$r.txt | awk -F'|' '{print $(NF-1)}')"
  done
done; el; pack
left 60 && { timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k.txt 2>&1
  echo "after 16k: $(rate $O/b16k.txt)"; el; }
left 50 && { timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1; echo "graph rc=$?";
  grep -E "^bound" $O/graph8b.txt | head -1; grep "graph x20" $O/graph8b.txt | head -15 | grep -o "^  graph x20 n_tok=1 .\{19\}\|v7 .\{25\}" | paste - - ; el; pack; }
ncu_step $M/8b-q4_k_m.gguf
finish
