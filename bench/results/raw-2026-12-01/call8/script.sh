#!/bin/bash
O=$OUT; B=/tmp/b; mkdir -p $B; tar xzf .gpubin/bin.tgz -C $B
M=/tmp/ls-models/70b-q4km.gguf; mkdir -p /tmp/ls-models; $B/layerstream synth -q -o $M --preset 70b --quant q4_k_m
for r in 1 2; do for tu in "" "pf=4,hint=1" "pf=2,hint=1"; do echo "== round $r '$tu'"; timeout 40 $B/layerstream bench -m $M --backend cpu -n 16 ${tu:+--cpu-tuning $tu} 2>&1 | tail -1; done; done | tee $O/ab.txt
