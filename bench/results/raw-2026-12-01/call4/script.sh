#!/bin/bash
O=$OUT; B=/tmp/b; mkdir -p $B; tar xzf .gpubin/bin.tgz -C $B
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
timeout 40 $B/ls_bench_cpu_matmul --threads 1 --ntok 1 --types q4_k,q6_k --act q8 --shapes l2 --weights-gib 0 --reps 100 --host-bytes-gib 0.5 > $O/l2.txt 2>&1; el l2
$B/layerstream probe --host-threads 16,15 --host-bytes 4GiB > $O/probe.txt 2>&1; el probe
mkdir -p /tmp/ls-models; $B/layerstream synth -q -o /tmp/ls-models/70b-q4km.gguf --preset 70b --quant q4_k_m; el synth
for r in 1 2 3; do for tu in "" "pf=2,hint=1"; do echo "== round $r --cpu-tuning '$tu'"; timeout 60 $B/layerstream bench -m /tmp/ls-models/70b-q4km.gguf --backend cpu -n 16 ${tu:+--cpu-tuning $tu} 2>&1 | tail -1; done; done > $O/e2e.txt; el e2e
grep -E "clock|l2-res|^ +1 " $O/l2.txt; grep -E "ceiling|contended" $O/probe.txt; cat $O/e2e.txt
BIN=$B OUT=$O CPU_ONLY=0 CPU_LAYERS="auto 27" PROMPTS="512 2048" bash .gpubin/gpu_hybrid_check.sh 2>&1 | tee $O/hybrid.txt | grep -vE "^\| (planner|reader|copier|sampler)"
el hybrid
