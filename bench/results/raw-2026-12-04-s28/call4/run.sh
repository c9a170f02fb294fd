#!/bin/bash
# Session 28, call 4: the CPU pool's threads pinned one a CPU (ThreadPool::pin)
# against left to the OS: the CPU attention alone (1k-16k, 16 threads, three
# rounds, orders alternated; the host probe pinned too, the higher figure the
# bound), then the engine (70b Q4_K_M at 24 GiB, default flags) with
# LS_CPU_PIN=0/1 after 1 and 4096 prompt tokens.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  P=off,on; [ $((r % 2)) = 0 ] && P=on,off
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --pin $P > $O/attn$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn$r.txt; f $O/attn$r.txt
done; el
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
F=$M/70b-q4km.gguf
for run in "0 1" "1 1" "1 4096" "0 4096"; do
  set -- $run
  echo "== LS_CPU_PIN=$1 bench --prompt-tokens $2"
  LS_CPU_PIN=$1 timeout 60 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB -c 4608 -n 32 --prompt-tokens $2 --stats > $O/eng-$1-$2.txt 2>&1
  echo "rc=$?"; grep -E "^\| [0-9]|re-planning" $O/eng-$1-$2.txt | cut -c1-200
done; el
