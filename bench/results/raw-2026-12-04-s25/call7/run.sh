#!/bin/bash
# Session 25, call 7: issue 14 on one machine. First (the machine quiet) the
# CPU attention alone with the final defaults (tiled keys, next block's keys
# fetched in the value loop, claim-ahead stopping at a block per thread)
# beside the row form, three rounds in alternating order. Then llama.cpp
# (ggerganov/llama.cpp c392e50, built here, never committed) while synth
# writes the 70b Q4_K_M, llama-batched-bench -ngl 46 on it, and layerstream
# with default flags after prompts of 1, 256, 1024 and 4096 tokens and on a
# real 1k text (scripts/gpu_hybrid_default_check.sh).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M /tmp/ll
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
tar -xJf $R/.gpubin/llsrc.txz -C /tmp/ll || exit 2
nproc; el
for r in 1 2 3; do
  L=tiles,heads; [ $r = 2 ] && L=heads,tiles
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 --json $O/attn-$r.json > $O/attn-$r.txt 2>&1
  echo "attn round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | awk '{print $1,$4,$7,$10,$14,$15}'
done; el
( cd /tmp/ll && cmake -B b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release > $O/llbuild.txt 2>&1 &&
  timeout 330 cmake --build b -j 15 --target llama-batched-bench >> $O/llbuild.txt 2>&1; echo "llama build rc=$?" ) &
timeout 200 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
wait; tail -3 $O/llbuild.txt; ls /tmp/ll/b/bin/ | head; el
cd $R
BIN=$B OUT=$O/check LLAMA=/tmp/ll/b/bin MODELS=$M PARTS="llama prompts text" timeout 330 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | head -80; el
