#!/bin/bash
# Session 56, call 2 (for an H200, the issue's machine): issue 20's figures
# beside llama.cpp in the same call, and what the H200's step waits on.
# (1) llama.cpp (ggerganov/llama.cpp c392e5094 as fetched, its source carried
#     as .gpubin/llsrc.txz, never committed) built here, llama-bench only,
#     static, sm_90; the 8b Q4_K_M and Q8_0 synthesized beside the build;
# (2) ls_bench_matmul --graph: each decode GEMV form alone in a graph, against
#     the D2D bound of the same run;
# (3) the 8b Q4_K_M, `bench -n 128`: the default (every L2 prefetch off)
#     and session 55's prefetches on this machine (the GEMV's 4 MiB, call
#     1's one gain on the H100; the norms' 16 MiB with it; each block 8 MiB
#     ahead), alternated with `llama-bench -p 0 -n 128 -ngl 99 -r 3` on the
#     same file, two rounds;
# (4) after a 16k prompt, the default and the GEMV's 4 MiB; (5) Q8_0 the
#     same with llama-bench; (6) ncu of one decode step if time is left;
# (7) llama-bench back compressed, in 15 MB parts, for later calls.
# Run: OUT=$OUT LIMIT=550 bash bench/results/raw-2026-12-07-s56/call2/run.sh $PWD (timeout 580;
# carry .gpubin/bin.txz and .gpubin/llsrc.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-550}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( for q in q4_k_m q8_0; do
    timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
  done ) &
SY=$!
mkdir -p /tmp/lc && tar -xJf "$R/.gpubin/llsrc.txz" -C /tmp/lc
(cd /tmp/lc && cmake -S . -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DCMAKE_BUILD_TYPE=Release \
   -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF > $O/lc-cmake.txt 2>&1 &&
 timeout 330 cmake --build build -j 16 --target llama-bench > $O/lc-build.txt 2>&1)
echo "llama.cpp build rc=$?"; tail -2 $O/lc-build.txt; wait $SY; el; pack
LB=/tmp/lc/build/bin/llama-bench
lcb() {  # llama-bench on file $1, output $2
  [ -x $LB ] && left 40 && timeout 60 $LB -m $1 -p 0 -n 128 -ngl 99 -r 3 > $2 2>&1
  echo "llama.cpp: $(grep -E 'tg128' $2 | awk -F'|' '{print $(NF-1)}')"
}
left 200 && { timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1; echo "graph rc=$?";
  grep -E "^bound|q4_K ffn gate|q6_K ffn down|q4_K attn q\|k|q8_0 ffn gate" $O/graph8b.txt | head -6 | cut -c1-150; el; }
OFF="LS_X=1"; G4="LS_L2_PREFETCH_GEMV=4"
AB="$OFF;$G4;LS_L2_PREFETCH=16 $G4;LS_L2_PREFETCH=16 LS_GEMV_AHEAD=8 LS_L2_PREFETCH_GEMV=8"
for r in 1 2; do
  left 120 || break
  ab_runs q4r$r 1 -m $M/8b-q4_k_m.gguf -n 128
  grep "device memory bound" $O/q4r$r-*.txt | head -1 | cut -c1-170
  lcb $M/8b-q4_k_m.gguf $O/lc-q4-$r.txt
done; el; pack
for e in "$OFF" "$G4"; do
  left 100 || break
  n=$(echo "$e" | tr ' =' '__')
  env $e timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k-$n.txt 2>&1
  echo "after 16k, $e: $(rate $O/b16k-$n.txt)"
done; el
AB="$OFF;$G4"
for r in 1 2; do
  left 70 || break
  ab_runs q8r$r 1 -m $M/8b-q8_0.gguf -n 128
  lcb $M/8b-q8_0.gguf $O/lc-q8-$r.txt
done; el; pack
if [ -x $LB ]; then
  (cd /tmp/lc/build/bin && strip llama-bench && XZ_OPT="-6 -T16" tar -cJf - llama-bench | split -b 15M -d -a 2 - $OUT/llama-bench.txz.part)
fi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if left 80 && [ -n "$NCU" ]; then
  timeout $((LIMIT - SECONDS - 10)) $NCU --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
    --log-file $O/ncu-8b.csv $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 3 --temp 0 > /dev/null 2>&1
  echo "ncu 8b rc=$?"; python3 $R/scripts/ncu_step_summary.py $O/ncu-8b.csv 2>&1 | head -16 | cut -c1-150; xz -T4 $O/ncu-8b.csv; el
fi
finish
