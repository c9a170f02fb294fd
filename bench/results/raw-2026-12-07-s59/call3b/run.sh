#!/bin/bash
# Session 59, call 3b (call 3's machine, still warm): the pool pinned, with
# the pause hint or not, blocks by the kernel's rule or of 96, the fold's
# prefetch off and on, 1k-2k, three rounds.
# Run: bash bench/results/raw-2026-12-07-s59/call3b/run.sh (timeout 240; carry .gpubin/spans-attn.txz)
A=/tmp/sa/ls_bench_cpu_attention_spans; [ -x $A ] || { mkdir -p /tmp/sa && tar -xJf .gpubin/spans-attn.txz -C /tmp/sa; }
for r in 1 2 3; do for p in 0 20; do
  LS_POOL_PAUSE_US=$p timeout 50 $A --ctx 1024,2048 --reps 31 --pin on --block 0,96 --fold-pf off,on > $OUT/pp$p-$r.txt 2>&1
  echo "pinned pause=$p r$r host $(awk '/^ +16 /{print $2; exit}' $OUT/pp$p-$r.txt): $(grep -E '^ +[0-9]+ +16 ' $OUT/pp$p-$r.txt | awk '{printf "%s %s %s %s us %s; ", $1, $5, $7, $10, $NF}')"
done; done
cd $OUT && tar -czf pp.tgz pp*.txt && rm pp*.txt
