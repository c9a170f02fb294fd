#!/bin/bash
# Session 7, call 5: the 70b hybrid at 24 GiB, widths 1, 8, 32, 64, after
# two fixes: an unmeasured width keeps one CPU layer until measured, and
# bench counts the bytes moved inside its window only.
set -u
O=$OUT; M=/tmp/m5; B=/tmp/b5; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s7bin5.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 140 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32,64 --prompt-tokens 16 -n 8 -c 256 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||CPU tier by|error" $O/bench-70b-batch.txt; el
