#!/bin/bash
# Session 50 call 2: the direct GEMV's first tile loaded into registers
# before the PDL wait (GemvQ8Params::early, LS_GEMV_EARLY=1) and 8 rows a
# block for the 8b's down GEMV (LS_GEMV_ROWS8_MIN_IN=14336): the GEMV test
# (both forms against the references), the decode and backend tests with
# the early loads on, ls_bench_matmul --graph (v7 / v7e / v78 / v78e), and
# the 8b Q4_K_M decode in alternated rounds against its bound.
# Run: OUT=$OUT LIMIT=400 bash bench/results/raw-2026-12-06-s50/call2/run.sh $PWD   (timeout 420)
# (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-400}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
[ -f $M/8b-q4_k_m.gguf ] || ( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1 ) &
SYN=$!
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" > $O/tests-gemv.txt 2>&1)
echo "gemv test rc=$?"; grep -E "test cases|assertions|Status" $O/tests-gemv.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-gemv.txt | head -40
(cd $R && LS_GEMV_EARLY=1 LS_GEMV_ROWS8_MIN_IN=14336 timeout 120 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*,*graphs*" > $O/tests-early.txt 2>&1)
echo "decode/backend tests with early loads and 8 rows rc=$?"; grep -E "test cases|assertions|Status" $O/tests-early.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-early.txt | head -40; el; pack
timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
grep -E "bound|graph x20" $O/graph8b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//; s/ v72 [^|]*|//; s/ v71 [^|]*|//' | cut -c1-300 | head -12
el; pack
wait $SYN; el
for r in 1 2 3; do
  for e in "LS_X=1" "LS_GEMV_EARLY=1" "LS_GEMV_ROWS8_MIN_IN=14336" "LS_GEMV_EARLY=1 LS_GEMV_ROWS8_MIN_IN=14336"; do
    n=$(echo $e | tr ' =' '__')
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-$n-$r.txt 2>&1
    echo "8b round $r, $e: $(rate $O/b8-$n-$r.txt)"
  done
done; el; pack
for e in "LS_X=1" "LS_GEMV_EARLY=1 LS_GEMV_ROWS8_MIN_IN=14336"; do
  n=$(echo $e | tr ' =' '__')
  env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 48 > $O/b8p300-$n.txt 2>&1
  echo "8b after 300, $e: $(rate $O/b8p300-$n.txt)"
done; el; pack
if left 100; then
  timeout 90 $B/ls_bench_matmul --graph 70b > $O/graph70b.txt 2>&1
  grep -E "bound|graph x20" $O/graph70b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//; s/ v72 [^|]*|//; s/ v71 [^|]*|//' | cut -c1-300 | head -12
  el
fi
finish
