#!/bin/bash
O=$OUT; B=/tmp/b; mkdir -p $B; tar xzf .gpubin/bin.tgz -C $B
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
M=/tmp/ls-models/70b-q4km.gguf; mkdir -p /tmp/ls-models; $B/layerstream synth -q -o $M --preset 70b --quant q4_k_m; el synth
H="--backend cuda --vram-budget 24GiB --ram-budget 48GiB"
for d in 4 8 16; do for n in 28 auto; do echo "== depth $d cpu-layers $n"
  $B/layerstream bench -m $M $H --cpu-layers $n --depth $d -n 12 --trace $O/t.json 2>&1 | grep -E "predicted|^\| [0-9]" | cut -c1-60,200-400
  $B/layerstream trace summarize $O/t.json --from-step 2 2>&1 | grep -E "gpu-copy|cpu-compute"; rm -f $O/t.json; el d$d$n; done; done 2>&1 | tee $O/depth.txt
for r in 1 2 3; do timeout 60 $B/layerstream bench -m $M --backend cpu -n 16 2>&1 | tail -1; done | tee $O/cpu_alone.txt; el cpu
