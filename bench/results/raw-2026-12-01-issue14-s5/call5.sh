#!/bin/bash
# Call 5 (session 5): CPU attention variants (A as committed; B no key
# prefetch; C 256-position blocks; D key prefetch 16 ahead), then the default
# plan beside fixed --cpu-layers in one sweep, after 1 and 4096 tokens.
O=$OUT; B=/tmp/b5; mkdir -p $B
tar xJf .gpubin/bin5.txz -C $B
date -u | tee $O/log.txt
for v in A B C D A B C D; do echo "== $v"; $B/bench_$v --ctx 1024,4096,16384 --reps 21 2>&1 | tail -n 3; done | tee -a $O/log.txt
BIN=$B OUT=$O STEPS=48 SWEEP=auto,24,26,28,30 PARTS="sweep" \
  bash scripts/gpu_hybrid_default_check.sh 2>&1 | tee -a $O/log.txt
