#!/bin/bash
# Session 50, two planned calls in one (device time was short; the two were
# never run alone): the direct GEMV's early loads and 8-row down, and issue
# 14's llama.cpp check of the synthetic 70b at Q8_0, written in
# the background into a RAM file system while the GPU tests run; the timed
# runs start once it is read and removed.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-06-s50/call2b/run.sh $PWD   (timeout 580)
# (carry .gpubin/bin.txz and .gpubin/lcpp-cpu.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
tar -xJf $R/.gpubin/lcpp-cpu.txz -C $B || exit 2
L=$B/layerstream
free -g | head -2
D=/mnt/big
mkdir -p $D && mount -t tmpfs -o size=100G tmpfs $D ||
  { mount -o remount,size=100G /dev/shm; D=/dev/shm; }
df -h $D | tail -1
F=$D/70b-q8_0.gguf
( timeout 320 nice -n 10 $L synth -q -o $F --preset 70b --quant q8_0 > $O/synth70.txt 2>&1; echo "rc=$?" >> $O/synth70.txt ) &
SYN70=$!
timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" > $O/tests-gemv.txt 2>&1)
echo "gemv test rc=$?"; grep -E "test cases|assertions|Status" $O/tests-gemv.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-gemv.txt | head -40
(cd $R && LS_GEMV_EARLY=1 LS_GEMV_ROWS8_MIN_IN=14336 timeout 120 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*,*graphs*" > $O/tests-early.txt 2>&1)
echo "decode/backend tests with early loads and 8 rows rc=$?"; grep -E "test cases|assertions|Status" $O/tests-early.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-early.txt | head -40; el; pack
timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
grep -E "bound|graph x20" $O/graph8b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//; s/ v72 [^|]*|//; s/ v71 [^|]*|//' | cut -c1-300 | head -12
el; pack
wait $SYN70; cat $O/synth70.txt | tail -3; ls -la $F; el
timeout 100 $B/llama-bench -m $F -p 0 -n 2 -r 1 -ngl 0 -t 16 > $O/lcpp-70b-q8_0.txt 2>&1
echo "llama-bench 70b q8_0 rc=$?"; grep -E "\| llama|error|failed" $O/lcpp-70b-q8_0.txt | head -5; el; pack
rm -f $F; [ $D = /mnt/big ] && umount $D
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
if left 40; then
  timeout 35 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 61 > $O/cpu-att.txt 2>&1
  grep -E "^ *[0-9]+ " $O/cpu-att.txt | head -6; el; pack
fi
if left 80; then
  timeout 70 $B/ls_bench_matmul --graph 70b > $O/graph70b.txt 2>&1
  grep -E "bound|graph x20" $O/graph70b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//; s/ v72 [^|]*|//; s/ v71 [^|]*|//' | cut -c1-300 | head -12
  el
fi
finish
