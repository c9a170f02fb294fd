#!/bin/bash
# Session 22, call 3 (H200): the whole GPU suite with the matmul test's
# thresholds on each path's runs pooled (each run within 25x).
set -u
O=$OUT/l; mkdir -p $O; B=/tmp/bn; mkdir -p $B
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 400 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | head -3; grep -B3 -A8 "ERROR" $O/gpu-tests.txt | head -30
grep -E "worst NMSE" $O/gpu-tests.txt | head -30
date -u
