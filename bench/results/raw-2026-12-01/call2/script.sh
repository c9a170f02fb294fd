#!/bin/bash
# Call 2 (issue 8): new CPU split + K4 order vs the old binaries, same call.
O=$OUT; mkdir -p /tmp/new /tmp/old /tmp/base
tar xzf .gpubin/bin.tgz -C /tmp/new; tar xzf .gpubin/old.tgz -C /tmp/old; cp .gpubin/bench_base /tmp/base/
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
# 1. compute rates from L2, one thread and 16: base (before the K4 order) vs new
for v in base new; do
  B=/tmp/$v/ls_bench_cpu_matmul; [ $v = base ] && B=/tmp/base/bench_base
  echo "== L2 $v"; timeout 60 $B --threads 1,16 --ntok 1,8 --types q4_k,q6_k --act q8 --shapes l2 --weights-gib 0 --reps 200 --host-bytes-gib 0.5 2>&1 | grep -E "clock|l2-res|^ +(1|16) "
done > $O/l2.txt; el l2
# 2. DRAM sweep of the new split (file pages, as the model is read)
timeout 150 /tmp/new/ls_bench_cpu_matmul --threads 16 --ntok 1 --types q4_k,q6_k --act q8 --mem file --file-dir /dev/shm --tasks 1,2,4,16 --pf 1,2 --reps 5 --host-bytes-gib 2 > $O/sweep.txt 2>&1; el sweep
/tmp/new/layerstream probe --host-threads 16,15 --host-bytes 4GiB > $O/probe.txt 2>&1; el probe
mkdir -p /dev/shm/m; /tmp/new/layerstream synth -q -o /dev/shm/m/70b.gguf --preset 70b --quant q4_k_m; el synth
{ for v in new old new; do for t in 16; do echo "== $v -t $t"; timeout 60 /tmp/$v/layerstream bench -m /dev/shm/m/70b.gguf --backend cpu -t $t -n 8 2>&1 | tail -1; done; done
  echo "== new -t 15"; timeout 60 /tmp/new/layerstream bench -m /dev/shm/m/70b.gguf --backend cpu -t 15 -n 8 2>&1 | tail -1; } > $O/e2e.txt; el e2e
/tmp/new/layerstream probe --host-threads 16 --host-bytes 4GiB > $O/probe2.txt 2>&1; el probe2
cat $O/l2.txt $O/probe.txt; grep -E "^q" $O/sweep.txt | awk '{print $1,$2,$3,$12,$13,$14,$15,$16,$18}' | column -t; cat $O/e2e.txt $O/probe2.txt
