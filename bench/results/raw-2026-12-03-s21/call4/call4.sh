#!/bin/bash
# Session 21, call 4 (H200): the final tree's whole GPU suite; the 8b Q8_0
# resident decode with one graph a step against bench's device-memory bound
# (issue 20's Q8_0 line), three runs.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 90 $L synth -q -o $M/8b-q8.gguf --preset 8b --quant q8_0; el
for r in 1 2 3; do timeout 60 $L bench -m $M/8b-q8.gguf -n 128 > $O/bench-8b-q8-r$r.txt 2>&1; grep -E "^device memory|^\| [0-9]" $O/bench-8b-q8-r$r.txt; done; el
timeout 300 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1
echo "GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -40; el
date -u
