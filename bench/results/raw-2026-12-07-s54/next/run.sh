#!/bin/bash
# The next calls (prepared in session 54, not yet run): issue 20 with the
# weights streamed past the caches, beside llama.cpp on the same files in
# the same machine's calls, and on the H200 if one comes. llama.cpp's
# llama-bench (c392e5094, .gpubin/lcpp-bench.txz, 32 MB) and our binaries
# (.gpubin/bin.txz) no longer fit one call's carry with the tree, so two
# calls on one warm machine (start the second within 30 s of the first):
#   PHASE=ll   (carry .gpubin/lcpp-bench.txz): llama-bench into /tmp/ll.
#              The tree (38 MB, with ../shared 46) and llama-bench (32 MB)
#              are over the carry limit too: move model/weights and
#              bench/results/raw-2026-12-0[1-5]* aside (mv to /tmp/aside)
#              for this call and back right after (absent files travel as
#              absent; nothing here needs them), as session 28 did.
#   PHASE=main (carry .gpubin/bin.txz): the runs below
# (1) 8b Q4_K_M and Q8_0 resident: `layerstream bench -n 128` (default;
#     LS_L2_FETCH=0: the L2's fetch left to the driver) and llama-bench
#     -p 0 -n 128 -ngl 99 -r 3, alternated, three rounds; for Q4_K_M also
#     LS_GEMV_EARLY=1 (session 50's early loads, which lost 5 % on an H100
#     before the weights were streamed and won 4 % on an H200 in a form that
#     spilled), LS_GEMV_STREAM=0 (plain weight loads: the hint's A/B, in
#     kernels of their own; first on an H200 if one comes) and
#     LS_GEMV_ROWS=8 (8 rows a block in the direct form's one-format
#     launches: twice the bytes in flight a warp).
# First: ls_gpu_tests -tc="cuda matmul: gemv v5*" (the plain loads' bits
# against the hinted ones: a new check, never run on a GPU yet).
# (2) On an H200: the 70b Q4_K_M fully resident (issue 20's third line),
#     ours and llama.cpp's, one round each.
# (3) After a 16k prompt (issue 20's last line), ours, one run.
# Run: PHASE=ll OUT=$OUT LIMIT=60 bash bench/results/raw-2026-12-07-s54/next/run.sh $PWD (timeout 80)
#      PHASE=main OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-07-s54/next/run.sh $PWD (timeout 570)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-540}
. "$R/scripts/gpu_call_lib.sh"
LB=/tmp/ll/llama-bench
if [ "${PHASE:-main}" = ll ]; then
  mkdir -p /tmp/ll $O && tar -xJf "$R/.gpubin/lcpp-bench.txz" -C /tmp/ll && ls -la /tmp/ll
  nvidia-smi --query-gpu=name --format=csv,noheader; finish; exit 0
fi
unpack_bins
timeout 120 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*,decode fused*" > $O/tests.txt 2>&1
echo "gemv tests rc=$?"; grep -E "test cases|assertions|ERROR" $O/tests.txt | head -5; el
[ -x $LB ] || echo "no llama-bench in /tmp/ll: PHASE=ll did not run on this machine; ours alone"
L=$B/layerstream
for q in q4_k_m q8_0; do
  timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
done; el
for q in q4_k_m q8_0; do
  for r in 1 2 3; do
    left 60 || break
    timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-$r.txt 2>&1
    echo "layerstream 8b $q round $r: $(rate $O/b8-$q-$r.txt)"
    LS_L2_FETCH=0 timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-f0-$r.txt 2>&1
    echo "layerstream 8b $q round $r, LS_L2_FETCH=0: $(rate $O/b8-$q-f0-$r.txt)"
    [ $q = q4_k_m ] && { LS_GEMV_EARLY=1 timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-early-$r.txt 2>&1
      echo "layerstream 8b $q round $r, LS_GEMV_EARLY=1: $(rate $O/b8-$q-early-$r.txt)"
      LS_GEMV_STREAM=0 timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-plain-$r.txt 2>&1
      echo "layerstream 8b $q round $r, LS_GEMV_STREAM=0: $(rate $O/b8-$q-plain-$r.txt)"
      LS_GEMV_ROWS=8 timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-rows8-$r.txt 2>&1
      echo "layerstream 8b $q round $r, LS_GEMV_ROWS=8: $(rate $O/b8-$q-rows8-$r.txt)"; }
    [ -x $LB ] && left 40 && { timeout 60 $LB -m $M/8b-$q.gguf -p 0 -n 128 -ngl 99 -r 3 > $O/lc-$q-$r.txt 2>&1
      echo "llama.cpp 8b $q round $r: $(grep -E 'tg128' $O/lc-$q-$r.txt | cut -c1-160)"; }
  done; el; pack
done
if left 120; then
  timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
  echo "layerstream 8b q4_k_m after 16k: $(rate $O/b8-16k.txt)"; el; pack
fi
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && left 300; then
  F70=$M/70b-q4_k_m.gguf
  timeout 200 $L synth -q -o $F70 --preset 70b --quant q4_k_m > $O/synth70.txt 2>&1; echo "synth 70b rc=$?"
  timeout 120 $L bench -m $F70 -n 64 > $O/b70.txt 2>&1; echo "layerstream 70b resident: $(rate $O/b70.txt)"
  [ -x $LB ] && left 60 && { timeout 100 $LB -m $F70 -p 0 -n 64 -ngl 99 -r 2 > $O/lc-70b.txt 2>&1
    echo "llama.cpp 70b: $(grep -E 'tg64' $O/lc-70b.txt | cut -c1-160)"; }
  el
fi
finish
