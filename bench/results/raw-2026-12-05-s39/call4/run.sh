#!/bin/bash
# Session 39, call 4: why the int8 GEMM reads at 0.35-0.45 of the bound at
# 2-16 tokens, streamed or not (call 3: the time hardly moves with the
# width). ncu's warp-state, scheduler, occupancy and memory sections of one
# launch each: the streamed kernel, the register kernel, the GEMV, on the
# 70b's Q4_K q/o at 2 tokens and gate/up at 8 (ls_bench_matmul --widths 70b).
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s39/call4/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b
mkdir -p $B $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
NCU=/usr/local/cuda/bin/ncu
S="--section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section SpeedOfLight"
# --widths 70b runs q4_K q/o first: n=2 gemv (3 + 30 launches), n=2 mmq!, ...
timeout 100 $NCU $S -k regex:mmq_stream_kernel --launch-skip 5 --launch-count 1 $B/ls_bench_matmul --widths 70b > $O/ncu-stream.txt 2>&1; echo "stream rc=$?"
LS_MMQ_STREAM=0 timeout 100 $NCU $S -k regex:mmq_kernel --launch-skip 5 --launch-count 1 $B/ls_bench_matmul --widths 70b > $O/ncu-reg.txt 2>&1; echo "reg rc=$?"
timeout 100 $NCU $S -k regex:gemv_q8 --launch-skip 5 --launch-count 1 $B/ls_bench_matmul --widths 70b > $O/ncu-gemv.txt 2>&1; echo "gemv rc=$?"
for f in stream reg gemv; do echo "== $f"; grep -E "mmq|gemv_q8|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Block Limit|Stall|cycles being stalled" $O/ncu-$f.txt | grep -v "^==PROF" | cut -c1-220 | head -40; done
(cd $OUT && tar -czf out.tgz r && rm -rf r)
