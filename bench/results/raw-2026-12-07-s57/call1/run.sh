#!/bin/bash
# Session 57, call 1 (any machine): session 56's next/run.sh (the grid barrier
# bench twice; on an H200 also session 56's call 4), then the CPU attention's
# default table (issue 14's last line) three times as this session's baseline.
# Run: OUT=$OUT LIMIT=400 bash bench/results/raw-2026-12-07-s57/call1/run.sh $PWD (timeout 430;
# carry .gpubin/bin.txz and .gpubin/llama-bench.txz, model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-400}
OUT=$OUT LIMIT=$((LIMIT - 60)) bash "$R/bench/results/raw-2026-12-07-s56/next/run.sh" "$R"
B=/tmp/b; tar -xJf "$R/.gpubin/bin.txz" -C $B ./ls_bench_cpu_attention || exit 2
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3" > $OUT/lscpu.txt
grep -o -w -E "avx512_fp16|avx512_bf16|amx_fp16|amx_bf16" /proc/cpuinfo | sort | uniq -c >> $OUT/lscpu.txt
cat $OUT/lscpu.txt
for i in 1 2 3; do
  [ $((LIMIT - SECONDS)) -ge 25 ] || break
  timeout 40 $B/ls_bench_cpu_attention --reps 31 > $OUT/attn-$i.txt 2>&1
  echo "attention round $i rc=$?"; grep -E "^ +[0-9]+ +16 " $OUT/attn-$i.txt
done
echo "--- ${SECONDS}s"
