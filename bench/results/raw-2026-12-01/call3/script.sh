#!/bin/bash
O=$OUT; mkdir -p /tmp/new; tar xzf .gpubin/bin.tgz -C /tmp/new; B=/tmp/new
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
timeout 40 $B/ls_bench_cpu_matmul --threads 1 --ntok 1 --types q4_k,q6_k --act q8 --shapes l2 --weights-gib 0 --reps 100 --host-bytes-gib 0.5 > $O/l2.txt 2>&1; el l2
timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 1 --types q4_k --act q8 --mem file --file-dir /dev/shm --tasks 2 --pf 1,2,4 --hint 0,1,3 --reps 5 --host-bytes-gib 2 > $O/sweep.txt 2>&1; el sweep
$B/layerstream probe --host-threads 16,15 --host-bytes 4GiB > $O/probe.txt 2>&1; el probe
mkdir -p /dev/shm/m; $B/layerstream synth -q -o /dev/shm/m/70b.gguf --preset 70b --quant q4_k_m; el synth
for tu in "" hint=1 hint=3 pf=2 "" tasks=4; do echo "== --cpu-tuning '$tu'"; timeout 60 $B/layerstream bench -m /dev/shm/m/70b.gguf --backend cpu -n 16 ${tu:+--cpu-tuning $tu} 2>&1 | tail -1; done > $O/e2e.txt; el e2e
$B/layerstream probe --host-threads 16 --host-bytes 4GiB > $O/probe2.txt 2>&1; el probe2
grep -E "clock|l2-res|^ +1 " $O/l2.txt; grep -E "clock|^ +16 |^q" $O/sweep.txt | cut -c1-20,60-140; grep -E "ceiling|contended" $O/probe.txt $O/probe2.txt; cat $O/e2e.txt
