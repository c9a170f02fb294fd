#!/bin/bash
# Session 39, call 5: the streamed int8 GEMM with x staged beside the
# weights (up to 16 tokens) and K split over a cluster of blocks (call 4:
# 8 warps an SM, 39 % of stalls on x's loads). Its test, then
# ls_bench_matmul --widths 70b: default, LS_MMQ_MT=1, the register kernel
# (LS_MMQ_STREAM=0); ncu of the streamed kernel on q4_K q/o at 2 tokens.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s39/call5/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b
mkdir -p $B $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
(cd $R && timeout 200 $B/ls_gpu_tests -tc="cuda matmul: mmq*" > $O/test-mmq.txt 2>&1); echo "mmq test rc=$?"; tail -3 $O/test-mmq.txt
timeout 100 $B/ls_bench_matmul --widths 70b > $O/widths-stream.txt 2>&1; echo "widths rc=$?"
LS_MMQ_MT=1 timeout 100 $B/ls_bench_matmul --widths 70b > $O/widths-mt1.txt 2>&1; echo "widths mt1 rc=$?"
LS_MMQ_STREAM=0 timeout 100 $B/ls_bench_matmul --widths 70b > $O/widths-reg.txt 2>&1; echo "widths reg rc=$?"
for f in stream mt1 reg; do echo "== $f"; grep "widths q4_K\|widths q6_K" $O/widths-$f.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/\| n=([0-9]+) (gemv|f16) +[0-9.]+ us [0-9.]+ //g; s/ us//g' | cut -c1-200; done
S="--section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section SpeedOfLight"
timeout 100 /usr/local/cuda/bin/ncu $S -k regex:mmq_stream_kernel --launch-skip 5 --launch-count 1 $B/ls_bench_matmul --widths 70b > $O/ncu-stream.txt 2>&1; echo "ncu rc=$?"
grep -E "Duration|DRAM Throughput|Achieved Active|Issued Warp|No Eligible|Eligible Warps|Block Limit Shared|Block Limit Reg|L1/TEX Hit|spends|being stalled" $O/ncu-stream.txt | cut -c1-160
(cd $OUT && tar -czf out.tgz r && rm -rf r)
