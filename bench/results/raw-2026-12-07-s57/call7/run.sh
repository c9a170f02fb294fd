#!/bin/bash
# Session 57, call 7 (any machine): (1) the pool's home tasks (each thread's
# first task claimed by a flag of its own, each worker's mark in a line of
# its own) against the pool before them (ls_bench_cpu_attention_old, built
# from 456c145's tree, carried as .gpubin/old-attn.txz), issue 14's 1k line:
# `--ctx 1024,2048,4096 --reps 31`, alternated, four rounds each, then one
# `--ctx 1024 --timeline` each; (call 6, which also ran call 5, trimmed
# when the device budget was nearly spent; neither ran).
# Run: OUT=$OUT LIMIT=150 bash bench/results/raw-2026-12-07-s57/call7/run.sh $PWD (timeout 170;
# carry .gpubin/bin.txz and .gpubin/old-attn.txz, model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-540}
B=/tmp/b; mkdir -p $B $OUT/attn
tar -xJf "$R/.gpubin/bin.txz" -C $B ./ls_bench_cpu_attention && tar -xJf "$R/.gpubin/old-attn.txz" -C $B || exit 2
for r in 1 2 3 4; do
  for v in new old; do
    A=$B/ls_bench_cpu_attention; [ $v = old ] && A=${A}_old
    timeout 40 $A --ctx 1024,2048,4096 --reps 31 > $OUT/attn/$v-$r.txt 2>&1
    echo "$v round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/attn/$v-$r.txt) GB/s; $(grep -E '^ +[0-9]+ +16 ' $OUT/attn/$v-$r.txt | awk '{printf "%s %s us %s; ", $1, $10, $NF}')"
  done
done
for v in new old; do
  A=$B/ls_bench_cpu_attention; [ $v = old ] && A=${A}_old
  timeout 40 $A --ctx 1024 --reps 41 --timeline > $OUT/attn/$v-timeline.txt 2>&1
  echo "$v:"; grep -E "timeline|calls where" $OUT/attn/$v-timeline.txt
done
echo "--- ${SECONDS}s"
(cd $OUT && tar -czf attn.tgz attn && rm -rf attn)
