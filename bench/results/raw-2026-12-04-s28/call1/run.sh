#!/bin/bash
# Session 28, call 1: issue 14's engine lines after 1, 256 and 1024 prompt
# tokens, layerstream (default flags) beside llama.cpp (c392e50, built here
# outside the project tree, never committed; -ngl 46) on the same file in the
# same call, and decode -f of a real text (~1k tokens). llama.cpp builds while
# synth writes the 70b Q4_K_M; the runs start after both, one at a time. Its
# binaries go back under $OUT in pieces (scripts/gpu_llamacpp_build.sh) for
# later calls. llama.cpp's first row (1 token) is a warm-up, reported apart.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; free -g | head -2
( OUT=$O timeout 330 bash $R/scripts/gpu_llamacpp_build.sh $R/.gpubin/llsrc.txz /tmp/ll > $O/llbuild-ls.txt 2>&1; echo "llama build rc=$?" ) &
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
wait; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts text" PROMPTS="1 256 1024" timeout 170 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | cut -c1-600; el
echo "== llama.cpp: llama-batched-bench -ngl 46 -c 4608 -npp 1,1,256,1024 -ntg 16 -npl 1"
timeout 150 /tmp/ll/b/bin/llama-batched-bench -m $M/70b-q4km.gguf -ngl 46 -c 4608 -npp 1,1,256,1024 -ntg 16 -npl 1 > $O/llama.txt 2>&1
echo "llama rc=$?"; grep -E "^\|" $O/llama.txt; el
