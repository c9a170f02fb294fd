#!/bin/bash
# Session 16, call 3 (H200): decode attention variants for short sub-ranges,
# behind LS_ATT_V bits (an experiment binary): 1 the output loop unrolled,
# 2 scores of a sub-range of <= 64 positions with each row's dot split over
# 16 lanes (shuffle sums), 4 L2 prefetch of a short split's K and V rows
# before the PDL wait. GPU tests of the attention paths with all three on,
# then 8b Q4_K_M and 70b Q4_K_M decode tok/s per setting, interleaved,
# beside the session-15 binary (old). This binary also runs the q, k of a
# Q4_K_M layer with a Q5_K v in one GEMV launch (all settings).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for v in 7; do LS_ATT_V=$v timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend*" 2>&1 | tail -30 > $O/gpu-tests-v$v.txt; grep -E "test cases|assertions" $O/gpu-tests-v$v.txt; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for v in old 0 1 2 4 7; do
  X=$L; [ $v = old ] && X=${L}_old
  echo "8b att_v=$v round $r: $(LS_ATT_V=$v timeout 60 $X decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/8b.txt; el
for v in 0 7; do LS_ATT_V=$v timeout 60 $L decode -m $M/8b.gguf -p Hello -n 48 --temp 0 --ids 2>/dev/null | tail -1 | md5sum; done | tee $O/ids.txt
for v in 0 7; do echo "8b 4k att_v=$v: $(LS_ATT_V=$v timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 4000 -n 64 -c 4096 2>&1 | tail -1 | cut -d'|' -f2-3)"; done | tee $O/8b-4k.txt; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for v in old 0 1 2 4 7; do
  X=$L; [ $v = old ] && X=${L}_old
  echo "70b att_v=$v round $r: $(LS_ATT_V=$v timeout 80 $X decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/70b.txt; el
# Why the Q6_K GEMV runs at 0.77 of the bandwidth where Q4_K runs at 0.91:
# ncu's stall and pipe sections on one 70b down GEMV of each type.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for re in E14ELi1ELi4ELi2ELb1ELS2_14E E12ELi1ELi4ELi2ELb1ELS2_12E; do
  timeout 100 $NCU --clock-control none --kernel-name-base mangled -k regex:$re --launch-skip 6 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy $L decode -m $M/70b.gguf -p Hello -n 2 --temp 0 > $O/ncu-$re.txt 2>&1; echo "ncu $re rc $?"
done; el
date -u
