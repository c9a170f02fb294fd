#!/bin/bash
# Diagnostic call 1 (issue 8, CPU tier at the host bound): compute-only rates,
# DRAM sweep of work split and prefetch, 70b end to end.
B=/tmp/b; O=$OUT; mkdir -p $B && tar xzf .gpubin/bin.tgz -C $B
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
{ date -u; lscpu | grep -E "Model name|MHz|L2|L3|NUMA|Thread"; cat /sys/kernel/mm/transparent_hugepage/enabled; which perf; nproc; } > $O/sys.txt 2>&1
ls $B
$B/layerstream probe --host-threads 16,15 --host-bytes 4GiB > $O/probe.txt 2>&1; el probe
timeout 60 $B/ls_bench_cpu_matmul --threads 1,16 --ntok 1 --types q4_k,q6_k --act q8 --weights-gib 0 --reps 9 --host-bytes-gib 1 > $O/compute_only.txt 2>&1; el compute
timeout 120 $B/ls_bench_cpu_matmul --threads 16 --ntok 1 --types q4_k,q6_k --act q8 --mem file --file-dir /dev/shm --tasks 1,4,16,64 --pf 0,1,2,4 --reps 5 --host-bytes-gib 2 > $O/sweep.txt 2>&1; el sweep
mkdir -p /dev/shm/m
$B/layerstream synth -q -o /dev/shm/m/70b.gguf --preset 70b --quant q4_k_m; el synth
$B/layerstream inspect /dev/shm/m/70b.gguf > $O/inspect70b.txt 2>&1
for t in 16 15; do timeout 60 $B/layerstream bench -m /dev/shm/m/70b.gguf --backend cpu -t $t -n 8 2>&1 | tail -3; el e2e$t; done > $O/e2e.txt
$B/layerstream probe --host-threads 16 --host-bytes 4GiB > $O/probe2.txt 2>&1; el probe2
cat $O/sys.txt $O/probe.txt $O/compute_only.txt; tail -80 $O/sweep.txt; grep -iE "q4_k|q6_k|total|bytes" $O/inspect70b.txt | head -20; cat $O/e2e.txt $O/probe2.txt
