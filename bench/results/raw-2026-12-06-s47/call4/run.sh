#!/bin/bash
# Session 47 call 4: where the tensor-core decode attention's time goes at
# 16k (the 8b's heads, 32 splits): ncu's full set on one launch of the
# kernel (ls_bench_attention 5 --shape 8b --ctx 16384: launch 261, one of
# the default 32 splits; the 240 before it are the fixed chunks'), beside the same on
# ls_bench_kv_read's bare read pattern at 2 stages, which takes 26.9 us
# where the kernel takes 33.5-34.8 (calls 1-3) and does not speed up with a
# third stage where the bare read does.
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-06-s47/call4/run.sh $PWD
# (carry .gpubin/bin.txz (777e6a0) and .gpubin/extra.txz (ls_bench_kv_read, ls_bench_attention))
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
tar -xJf "$R/.gpubin/extra.txz" -C "$B"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
timeout 120 $NCU --kernel-name regex:attention_decode_tc --launch-skip 260 --launch-count 1 --set full \
  -o $O/attn16k $B/ls_bench_attention 5 --shape 8b --ctx 16384 > $O/ncu-attn.log 2>&1; echo "ncu attn rc=$?"
timeout 60 $NCU --import $O/attn16k.ncu-rep --page details > $O/attn16k-details.txt 2>&1; el; pack
timeout 120 $NCU --kernel-name regex:tiles_kernel --launch-skip 20 --launch-count 1 --set full \
  -o $O/kvread16k $B/ls_bench_kv_read --ctx 16384 > $O/ncu-kvread.log 2>&1; echo "ncu kvread rc=$?"
timeout 60 $NCU --import $O/kvread16k.ncu-rep --page details > $O/kvread16k-details.txt 2>&1; el
for f in attn16k kvread16k; do
  echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Issued Ipc|Block Limit|Shared Memory Configuration Size|Dynamic Shared" $O/$f-details.txt | head -30
done
finish
