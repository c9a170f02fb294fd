#!/bin/bash
# Session 60's next call, for whichever GPU comes: call 1 (the host's
# cores, the attention on one CPU a core, `demote`), then, on an H200
# only, issue 20's H200 lines (session 57's call 4, through session 59's
# call 4, which does nothing on any other GPU).
# Run: OUT=$OUT bash bench/results/raw-2026-12-07-s60/call2/run.sh $PWD (timeout 590; carry
# .gpubin/s60.txz, .gpubin/bin.txz (4a91a12), .gpubin/llama-bench.txz)
set -u
R=$1
OUT=$OUT timeout 230 bash "$R/bench/results/raw-2026-12-07-s60/call1/run.sh" "$R"
echo "call 1 rc=$? at ${SECONDS}s"
OUT=$OUT LIMIT=$((560 - SECONDS - 20)) bash "$R/bench/results/raw-2026-12-07-s59/call4/run.sh" "$R"
