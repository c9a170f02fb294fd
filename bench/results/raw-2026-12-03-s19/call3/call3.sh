#!/bin/bash
# Session 19, call 3 (H200): the ring with the shared-memory carveout asked
# at its maximum (call 2: 2 and 3 buffers slower than 1, as if one block an
# SM fit). ls_bench_attention at 4k and 16k under 1, 2, 3 buffers and the
# form before; ncu of the 8b's kernel at 16k (2 buffers, and the form before).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for f in s2 sd0 s1 s3; do
  case $f in s2) e=LS_X=;; sd0) e=LS_ATTENTION_SPLIT_DOT=0;; s1) e=LS_ATTENTION_SLOTS=1;; s3) e=LS_ATTENTION_SLOTS=3;; esac
  for c in 4096 16384; do echo "$f $(env $e timeout 60 $B/ls_bench_attention 5 --ctx $c 2>&1 | grep ctx)" >> $O/bench-attention.txt; done
done
cut -c1-200 $O/bench-attention.txt; el
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for f in s2 sd0; do
  case $f in s2) e=LS_X=;; sd0) e=LS_ATTENTION_SPLIT_DOT=0;; esac
  env $e timeout 120 $NCU --clock-control none -k 'regex:attention_decode_kernel' --launch-skip 4 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis $B/ls_bench_attention 5 --shape 8b --ctx 16384 > $O/ncu-$f.txt 2>&1
  echo "ncu $f rc $?"; grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Dynamic Shared|Stall|Waves Per SM|Registers" $O/ncu-$f.txt | head -30
done; el
date -u
