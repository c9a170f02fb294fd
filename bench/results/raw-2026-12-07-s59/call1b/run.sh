#!/bin/bash
# Session 59, call 1b (the machine of call 1, still warm): the pool's waits
# polling with the pause hint for their first 20 us against yielding from
# the start, alternated, five rounds, with the same tasks read alone (--read).
# Run: bash bench/results/raw-2026-12-07-s59/call1b/run.sh (timeout 300; carry .gpubin/spans-attn.txz)
B=/tmp/b; mkdir -p $B; tar -xJf .gpubin/spans-attn.txz -C $B; A=$B/ls_bench_cpu_attention_spans
for r in 1 2 3 4 5; do for p in 20 0; do
  LS_POOL_PAUSE_US=$p timeout 40 $A --ctx 1024,2048,4096 --reps 31 --read > $OUT/p$p-$r.txt 2>&1
  echo "pause=$p r$r host $(awk '/^ +16 /{print $2; exit}' $OUT/p$p-$r.txt): $(grep -E '^ +[0-9]+ +16 ' $OUT/p$p-$r.txt | awk '{printf "%s %s %s us %s; ", $1, $3, $10, $NF}')"
done; done
