#!/bin/bash
# Session 27, call 3: issue 14's engine lines after 1 and 4096 prompt tokens,
# layerstream (default flags) and llama.cpp (c392e50, built here outside the
# project tree, never committed; -ngl 46) on the same file in the same call.
# llama.cpp builds while synth writes the 70b Q4_K_M; the runs start after
# both, ours first, one at a time. The llama.cpp binary goes back under
# $OUT (static, xz) for later calls.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M /tmp/ll
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
tar -xJf $R/.gpubin/llsrc.txz -C /tmp/ll || exit 2
nproc; free -g | head -2
( cd /tmp/ll && cmake -B b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release > $O/llbuild.txt 2>&1 &&
  timeout 330 cmake --build b -j 15 --target llama-batched-bench >> $O/llbuild.txt 2>&1; echo "llama build rc=$?" ) &
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
wait; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts" PROMPTS="1 4096" timeout 150 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; grep -E "==|^\| [0-9]|\[|error" $O/check.txt; el
echo "== llama.cpp: llama-batched-bench -ngl 46 -c 4608 -npp 1,4096 -ntg 16 -npl 1"
timeout 300 /tmp/ll/b/bin/llama-batched-bench -m $M/70b-q4km.gguf -ngl 46 -c 4608 -npp 1,4096 -ntg 16 -npl 1 > $O/llama.txt 2>&1
echo "llama rc=$?"; grep -E "^\|" $O/llama.txt; el
( cd /tmp/ll/b/bin && XZ_OPT="-6 -T15" tar -cJf $O/llama-batched-bench.txz llama-batched-bench ) ; ls -la $O; el
