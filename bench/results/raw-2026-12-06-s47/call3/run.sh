#!/bin/bash
# Session 47 call 3: the tensor-core decode attention's stages and split
# counts at 4k, 16k and 32k (the 8b's heads), for issue 20's long contexts:
# ls_bench_attention 5 --splits with LS_ATTENTION_TC_STAGES=2 and 3, and the
# bare read pattern at 2, 3 and 4 stages (ls_bench_kv_read).
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-06-s47/call3/run.sh $PWD
# (carry .gpubin/bin.txz (777e6a0) and .gpubin/extra.txz (ls_bench_kv_read))
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
tar -xJf "$R/.gpubin/extra.txz" -C "$B"
for c in 4096 16384 32768; do
  timeout 60 $B/ls_bench_kv_read --ctx $c > $O/kvread-$c.txt 2>&1; echo "kv_read $c rc=$?"; grep -E "tiles rows|flat" $O/kvread-$c.txt
done; el; pack
for r in 1 2; do for st in 2 3; do for c in 4096 16384 32768; do
  LS_ATTENTION_TC_STAGES=$st timeout 60 $B/ls_bench_attention 5 --splits --shape 8b --ctx $c > $O/attn-$st-$c-$r.txt 2>&1
  echo "stages $st ctx $c round $r:"; grep -E "splits" $O/attn-$st-$c-$r.txt | tail -12 | cut -c1-110
done; done; done; el
finish
