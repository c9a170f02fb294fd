#!/bin/bash
# Session 48 call 3: issue 20's peer. llama.cpp (ggerganov/llama.cpp as
# fetched, c392e5094, its source carried as .gpubin/lcpp-src.txz, never
# committed) built here (CUDA, sm_90, static) and run on the same 8b files as
# layerstream in the same call: `llama-bench -p 0 -n 128 -ngl 99 -r 3`
# against `layerstream bench -n 128`, Q4_K_M and Q8_0. Its binaries come back
# compressed (lcpp-bin.txz.*) for later calls.
# Run: OUT=$OUT LIMIT=510 bash bench/results/raw-2026-12-06-s48/call3/run.sh $PWD   (timeout 540)
# (carry .gpubin/bin.txz and .gpubin/lcpp-src.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-510}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
for q in q4_k_m q8_0; do
  timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > /dev/null 2>&1; echo "synth 8b $q rc=$?"
done; el
mkdir -p /tmp/lc && tar -xJf "$R/.gpubin/lcpp-src.txz" -C /tmp/lc
(cd /tmp/lc/lcpp && cmake -S . -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
   -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF > $O/lc-cmake.txt 2>&1 &&
 timeout $((LIMIT - SECONDS - 120)) cmake --build build -j 16 --target llama-bench llama-batched-bench > $O/lc-build.txt 2>&1)
echo "llama.cpp build rc=$?"; tail -3 $O/lc-build.txt; el; pack
LB=/tmp/lc/lcpp/build/bin/llama-bench
for q in q4_k_m q8_0; do
  for r in 1 2; do
    timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-$r.txt 2>&1
    echo "layerstream 8b $q round $r: $(rate $O/b8-$q-$r.txt)"; grep "device memory bound" $O/b8-$q-$r.txt | cut -c1-160
    left 40 && timeout 60 $LB -m $M/8b-$q.gguf -p 0 -n 128 -ngl 99 -r 3 > $O/lc-$q-$r.txt 2>&1
    echo "llama.cpp 8b $q round $r:"; grep -E "tg128|model" $O/lc-$q-$r.txt
  done
done; el; pack
if [ -x $LB ]; then
  (cd /tmp/lc/lcpp/build/bin && strip llama-bench llama-batched-bench 2>/dev/null;
   tar -cJf /tmp/lcpp-bin.txz llama-bench llama-batched-bench && split -b 15M /tmp/lcpp-bin.txz $OUT/lcpp-bin.txz.)
  ls -la $OUT
fi
finish
