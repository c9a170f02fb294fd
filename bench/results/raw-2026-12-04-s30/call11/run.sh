#!/bin/bash
# Session 30, call 11. The hybrid plan's device slots for streamed layers
# (--device-slots, 3 by default) on the synthetic 70b Q4_K_M at 24 GiB:
# 3, 4 and 5 after a 1-token prompt, then 5, 4, 3 after 1024 (bench
# --sweep), default flags otherwise.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=$M/70b.gguf
timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB -c 2048 -n 32)
timeout 200 $B/layerstream bench "${A[@]}" --prompt-tokens 1 --sweep slots=3,4,5 > $O/slots-1.txt 2>&1
echo "sweep 1 rc=$?"; grep -E "^\||tier plan|slots" $O/slots-1.txt | cut -c1-200; el
timeout 200 $B/layerstream bench "${A[@]}" --prompt-tokens 1024 --sweep slots=5,4,3 > $O/slots-1024.txt 2>&1
echo "sweep 1024 rc=$?"; grep -E "^\||tier plan|slots" $O/slots-1024.txt | cut -c1-200; el
