#!/bin/bash
# Session 60, call 1: do the host's 16 CPUs share cores? A VM can show 16
# cores of one thread that are 8 cores' two hardware threads; then two of
# the attention's threads share a core's fill buffers, which would explain
# why the CPU attention at 1k costs its read plus its arithmetic (session
# 52: 8 and 12 threads read alone at 0.99 of the host, 16 at 0.83).
# `layerstream probe --cores` measures it; then the attention at 1k and 4k
# on all 16 CPUs and, where cores are shared, on one CPU a core (8 threads)
# and on both CPUs of 4 cores (8 threads), each left to the OS and pinned.
# Then AttnCpuTuning::demote (a block's partial and a row's state pushed to
# the last-level cache, CLDEMOTE, so the next fold finds them there rather
# than in another core's L2) and AttnCpuTuning::endgame 1.3 (a thread whose
# fastest block is 1.3x slower than the fastest thread's starts none of the
# last blocks) against main's, each of the four alternated, three rounds
# at 1k and 2k, and a timeline of each at 1k ("folding", "ends spread").
# s60.txz: layerstream and ls_bench_cpu_attention built here without CUDA
# (-DLS_ENABLE_CUDA=OFF: only the probe runs; 1.9 MB) at a7c225f
# (.gpubin/s60.commit). Output under
# $OUT/c1/, packed as $OUT/c1.tgz at the end (the device returns 8 files).
# Run: bash bench/results/raw-2026-12-07-s60/call1/run.sh $PWD (timeout 300; carry .gpubin/s60.txz)
set -u
R=$1; B=/tmp/s60; mkdir -p $B; tar -xJf "$R/.gpubin/s60.txz" -C $B || exit 2
OUT0=$OUT; OUT=$OUT0/c1; mkdir -p $OUT
trap '(cd $OUT0 && tar -czf c1.tgz c1 && rm -rf c1)' EXIT
L=$B/layerstream; A=$B/ls_bench_cpu_attention
row() { grep -E "^ +[0-9]+ +(8|16) " "$1" | awk '{printf "%s t%s %s %s %s us %s; ", $1, $2, $3, $7, $10, $NF}'; echo; }
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node0|L2|L3"
echo "siblings (OS): $(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list | tr '\n' ' ')"
timeout 40 $L probe --cores --host-threads 8,16 --json $OUT/probe.json > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
read -r N ONE PAIRS < <(python3 - "$OUT/probe.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cores"]["cores"]
one = ",".join(str(g[0]) for g in c)
two = [g for g in c if len(g) >= 2][:4]
pairs = ",".join(str(x) for g in two for x in g[:2]) or "-"
print(len(c), one, pairs)
PY
)
echo "cores: $N; one CPU a core: $ONE; both CPUs of 4 cores: $PAIRS"
for r in 1 2; do
  timeout 45 $A --ctx 1024,4096 --reps 31 --threads 16 --pin off,on --read > $OUT/all-$r.txt 2>&1
  echo "round $r, 16 CPUs: host $(awk '/^ +16 /{print $2}' $OUT/all-$r.txt | tr '\n' ' ')"; row $OUT/all-$r.txt
  if [ "$N" -lt 16 ] && [ "$PAIRS" != "-" ]; then
    taskset -c "$ONE" timeout 40 $A --ctx 1024,4096 --reps 31 --threads 8 --pin off,on --read > $OUT/one-$r.txt 2>&1
    echo "round $r, one CPU a core ($ONE):"; row $OUT/one-$r.txt
    taskset -c "$PAIRS" timeout 40 $A --ctx 1024,4096 --reps 31 --threads 8 --pin on --read > $OUT/pairs-$r.txt 2>&1
    echo "round $r, both CPUs of 4 cores ($PAIRS):"; row $OUT/pairs-$r.txt
  fi
done
# Each pinned thread's blocks in the median call at 1k (thread i on CPU i):
# do the CPUs that share a core run their blocks slower?
timeout 40 $A --ctx 1024 --reps 61 --threads 16 --pin on --timeline-threads > $OUT/tl-threads.txt 2>&1
grep -E "^ +1024 |timeline" $OUT/tl-threads.txt
for r in 1 2 3; do
  timeout 40 $A --ctx 1024,2048 --reps 41 --threads 16 --demote off,on --endgame 0,1.3 > $OUT/demote-$r.txt 2>&1
  echo "demote round $r: host $(awk '/^ +16 /{print $2}' $OUT/demote-$r.txt | tr '\n' ' ')"; row $OUT/demote-$r.txt
done
timeout 40 $A --ctx 1024 --reps 61 --threads 16 --demote off,on --endgame 0,1.3 --timeline > $OUT/demote-tl.txt 2>&1
grep -E "^ +1024 |timeline|calls where" $OUT/demote-tl.txt
