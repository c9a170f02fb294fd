#!/bin/bash
# Session 19, call 8 (H200): the pipeline batch test that failed in call 7
# (oracle settings: a sequence in a batch bit for bit the sequence alone),
# with the grouped kernel's form no longer following the batch for f32 caches.
set -u
O=$OUT/l; mkdir -p $O; B=/tmp/bn; mkdir -p $B
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 150 $B/ls_gpu_tests -tc="cuda pipeline batch*" > $O/gpu-tests.txt 2>&1; echo "rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -c "ERROR" $O/gpu-tests.txt
date -u
