#!/bin/bash
# Session 52 call 1: session 50's call 4 (early GEMV loads, LS_GEMV_EARLY=1,
# against the plain form: tests, graph bench, the 8b Q4_K_M in alternated
# rounds, after 300 and 16,000 tokens) with issue 14's CPU attention first:
# the 1k..16k table and, at 1k, the pool pinned or not and the first blocks
# static or claimed. Binaries: .gpubin/bin.txz built at 8d7f62c.
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-07-s52/call1/run.sh $PWD   (timeout 440; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1 &
SYN=$!
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/cpuattn.txt 2>&1
echo "cpu attention rc=$?"; grep -E "GB/s|^ *[0-9]" $O/cpuattn.txt | head -20
wait $SYN; echo "synth 8b rc=$?"; el; pack
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --reps 61 --pin off,on --start static,claim > $O/cpuattn-1k.txt 2>&1
echo "cpu attention 1k sweep rc=$?"; grep -E "GB/s|^ *[0-9]|host" $O/cpuattn-1k.txt | head -20; el; pack
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" > $O/tests-gemv.txt 2>&1)
echo "gemv test rc=$?"; grep -E "test cases|assertions|Status" $O/tests-gemv.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-gemv.txt | head -40
(cd $R && LS_GEMV_EARLY=1 timeout 120 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*,*graphs*" > $O/tests-early.txt 2>&1)
echo "decode/backend tests with early loads rc=$?"; grep -E "test cases|assertions|Status" $O/tests-early.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-early.txt | head -40; el; pack
AB="LS_X=1;LS_GEMV_EARLY=1"
ab_runs b8 3 -m $M/8b-q4_k_m.gguf -n 128; el; pack
left 60 && { ab_runs b8p300 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 48; el; pack; }
left 50 && { timeout 45 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
  grep -E "bound|graph x20" $O/graph8b.txt | cut -c1-300 | head -12; el; pack; }
left 100 && { ab_runs b8-16k 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384; el; pack; }
finish
