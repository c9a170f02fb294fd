#!/bin/bash
# For the next session's first call (any machine): what session 57 could not
# run (its device starts were refused).
# (1) The thread pool's home tasks (`raw-2026-12-07-s57/call7/pool-home-tasks.patch`,
#     not on main: each thread's first task claimed by a flag of its own,
#     each worker's mark in a line of its own) against main's pool, on
#     issue 14's 1k line: ls_bench_cpu_attention_pool (main + the patch,
#     carried as .gpubin/pool-attn.txz) and ls_bench_cpu_attention_old
#     (main's pool, .gpubin/old-attn.txz), `--ctx 1024,2048,4096 --reps 31`,
#     alternated, four rounds, then `--ctx 1024 --timeline` each (the
#     threads' start spread: 0.7-2.5 us with main's pool, [s54]).
#     (Rebuild both if .gpubin lost them: apply the patch, `scripts/gpu_pack.sh`,
#     take ls_bench_cpu_attention from the pack, renamed.)
# (2) Session 57's call 5: the 8b Q4_K_M and Q8_0 after 1, 1,024 and 4,096-token
#     prompts beside llama-bench at the same depths, and LS_STEP_OMIT after 1k.
# (3) On an H200 with time left: session 57's call 4 (the issue's lines).
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-07-s57/next/run.sh $PWD (timeout 590;
# carry .gpubin/bin.txz, .gpubin/llama-bench.txz, .gpubin/old-attn.txz and
# .gpubin/pool-attn.txz, model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-560}
B=/tmp/b; mkdir -p $B $OUT/attn
tar -xJf "$R/.gpubin/old-attn.txz" -C $B && tar -xJf "$R/.gpubin/pool-attn.txz" -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3 4; do
  for v in pool old; do
    A=$B/ls_bench_cpu_attention_$v
    timeout 40 $A --ctx 1024,2048,4096 --reps 31 > $OUT/attn/$v-$r.txt 2>&1
    echo "$v round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/attn/$v-$r.txt) GB/s; $(grep -E '^ +[0-9]+ +16 ' $OUT/attn/$v-$r.txt | awk '{printf "%s %s us %s; ", $1, $10, $NF}')"
  done
done
for v in pool old; do
  timeout 40 $B/ls_bench_cpu_attention_$v --ctx 1024 --reps 41 --timeline > $OUT/attn/$v-timeline.txt 2>&1
  echo "$v:"; grep -E "timeline|calls where" $OUT/attn/$v-timeline.txt
done
echo "--- ${SECONDS}s"
(cd $OUT && tar -czf attn.tgz attn && rm -rf attn)
[ $((LIMIT - SECONDS)) -ge 150 ] &&
  OUT=$OUT LIMIT=$((LIMIT - SECONDS - 10)) bash "$R/bench/results/raw-2026-12-07-s57/call5/run.sh" "$R"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $((LIMIT - SECONDS)) -ge 220 ]; then
  mkdir -p $OUT/h200 && OUT=$OUT/h200 LIMIT=$((LIMIT - SECONDS)) bash "$R/bench/results/raw-2026-12-07-s57/call4/run.sh" "$R"
fi
ls -la $OUT
