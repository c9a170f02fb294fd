#!/bin/bash
# Session 7, call 4: main as it ends the session (the CPU GEMM merged, the
# split by width simulated with the device slots; paged KV if merged): the
# whole GPU suite, then the 70b hybrid at 24 GiB at widths 1-64, and one
# width-32 run with a trace of two steps' worth of stalls.
set -u
O=$OUT; M=/tmp/m4; B=/tmp/b4
mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nproc; nvidia-smi -L
tar -xJf .gpubin/s7bin4.txz -C $B || exit 2
cp model/weights/kjv-target-q8_0.gguf $B/layerstream-default.gguf
(cd /tmp && timeout 260 $B/ls_gpu_tests) > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"
tail -n 4 $O/gpu-tests.txt; grep -E "ERROR|FAILED" $O/gpu-tests.txt | head -20; el
L=$B/layerstream
timeout 100 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 200 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 16 -n 8 -c 256 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||tier plan|CPU tier|error" $O/bench-70b-batch.txt; el
