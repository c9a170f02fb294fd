#!/bin/bash
# Session 26, call 7: main at the commit of this script's parent, on the
# device. Quiet first: the CPU attention at 1k-16k (tiles and the engine's
# paged layout, three rounds) and the AVX-512 unit tests of the attention
# and the KV cache. Then llama.cpp (c392e50, built here, never committed)
# while synth writes the 70b Q4_K_M; llama-batched-bench -ngl 46 after 1
# and 1024 tokens; layerstream, default flags, after 1, 1024 and 4096.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M /tmp/ll
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
tar -xJf $R/.gpubin/llsrc.txz -C /tmp/ll || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | sed -E 's/^ +([0-9]+ +[0-9]+) +[a-z0-9]+ +([a-z]+) +([0-9]+) +([0-9]+) +([^ ]+) +[0-9]+ +[0-9.]+ +([0-9.]+) .* ([0-9.]+) +([0-9.]+)$/\1 \2 us \6 host \7 ratio \8/'; }
for r in 1 2 3; do
  L=tiles,paged; [ $r = 2 ] && L=paged,tiles
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 --json $O/attn-$r.json > $O/attn-$r.txt 2>&1
  echo "attn round $r rc=$?"; f $O/attn-$r.txt
done; el
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*,kv_cache*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions|SKIPPED|ERROR" $O/unit.txt | head; el
cd /tmp
( cd /tmp/ll && cmake -B b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release > $O/llbuild.txt 2>&1 &&
  timeout 300 cmake --build b -j 15 --target llama-batched-bench >> $O/llbuild.txt 2>&1; echo "llama build rc=$?" ) &
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
wait; el
echo "== llama.cpp: llama-batched-bench -ngl 46 -npp 1,1024 -ntg 16 -npl 1"
timeout 90 /tmp/ll/b/bin/llama-batched-bench -m $M/70b-q4km.gguf -ngl 46 -c 4608 -npp 1,1024 -ntg 16 -npl 1 2>&1 | grep -E "^\|"; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts" PROMPTS="1 1024 4096" timeout 240 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; grep -E "==|^\| [0-9]|\[" $O/check.txt; el
