#!/bin/bash
# Session 20, call 7 (H200, warm): the 70b hybrid plan's stall tables and
# traces, default (g) beside LS_LAYER_GRAPH=0 (p).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn
ls -la $M/70b.gguf || exit 3
L=$B/layerstream
for v in p g; do
  e=LS_X=1; [ $v = p ] && e=LS_LAYER_GRAPH=0
  env $e timeout 100 $L decode -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Hello -n 48 --temp 0 --no-display-prompt --stats --trace $O/trace-$v.json > /dev/null 2> $O/stats-$v.txt
  grep -o "generated [0-9]* tokens, [0-9.]* tok/s" $O/stats-$v.txt
done
xz -T4 $O/trace-*.json
date -u
