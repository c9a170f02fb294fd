#!/bin/bash
# Prepared in session 31 (no device lent) for the next session. Call 2:
# issue 14's decode lines on the tree with hybrid_depth (70b Q4_K_M at
# 24 GiB, default flags, after prompts of 1, 1024, 4096 tokens), then issue
# 18's verify cost by width and the replay draft at 0.7
# (scripts/gpu_speculative_check.sh), beside plain decoding, same call.
# Run: OUT=$OUT bash bench/results/raw-2026-12-04-s31/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd $R && BIN=$B OUT=$O/check MODELS=$M PARTS="prompts" PROMPTS="1 1024 4096" timeout 300 bash scripts/gpu_hybrid_default_check.sh > $O/prompts.txt 2>&1
echo "check rc=$?"; cut -c1-220 $O/prompts.txt; el
rm -f $M/70b*.gguf
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=128 KS="1 7" ALPHA_KS="7 0" timeout 240 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1
echo "spec rc=$?"; cut -c1-220 $O/spec.txt; el
