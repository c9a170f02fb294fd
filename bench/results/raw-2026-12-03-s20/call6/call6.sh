#!/bin/bash
# Session 20, call 6 (H200, the same warm machine as call 5): the 70b hybrid
# plan (--vram-budget 24GiB --ram-budget 48GiB), default beside
# LS_LAYER_GRAPH=0, two more rounds in alternating order.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn
ls -la $M/70b.gguf || exit 3
L=$B/layerstream
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
for r in 1 2; do for e in LS_LAYER_GRAPH=0 LS_X=1; do
  echo "70b 24GiB Hello $e r$r: $(env $e timeout 100 $L decode -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Hello -n 64 --temp 0 --no-display-prompt --stats 2>$O/stats-$e-$r.txt >/dev/null; cat $O/stats-$e-$r.txt | rate)" | tee -a $O/res.txt
done; done
date -u
