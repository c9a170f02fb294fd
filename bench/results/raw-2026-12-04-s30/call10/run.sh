#!/bin/bash
# Session 30, call 10. Issue 14's main lines on the final tree (the CPU
# attention's tapered blocks and the packers' prefetch are on the CPU
# tier's path): the synthetic 70b Q4_K_M at 24 GiB, default flags, decode
# after prompts of 1, 1024 and 4096 tokens (scripts/gpu_hybrid_default_check.sh
# PARTS=prompts).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd $R && BIN=$B OUT=$O/check MODELS=$M PARTS="prompts" PROMPTS="1 1024 4096" timeout 480 bash scripts/gpu_hybrid_default_check.sh > $O/prompts.txt 2>&1
echo "check rc=$?"; cut -c1-220 $O/prompts.txt; el
