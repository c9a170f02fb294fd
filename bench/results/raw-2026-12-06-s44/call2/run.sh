#!/bin/bash
# Session 44, call 2.
#  1. Where the width-32 run's device memory beyond the plan goes (call 1:
#     the run took 24.51-24.82 GiB where the plan counted 23.67; a
#     single-sequence run 224 MiB under): issue 17's shape, 48 new tokens,
#     LS_DEVMEM_TRACE=1 (each step's begin prints what the device lost since
#     the last print, with the widths in between).
#  2. Issue 18: three rounds of plain, K = 7 and K chosen, replay at 0.7.
#  3. Issue 17's shape in the AMX form a2l0 (call 1: +2 % in the width-32
#     GEMM over a1l0, under the 5 % the script asked), with the time left.
# Run: OUT=$OUT LIMIT=570 bash (timeout 600) bench/results/raw-2026-12-06-s44/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
wait $SYN; echo "synth rc=$?"; el
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32)
LS_DEVMEM_TRACE=1 timeout 90 $B/layerstream bench "${B32[@]}" -n 48 > $O/b32-trace.txt 2>&1
echo "width 32 traced rc=$?"; grep -E "^devmem|device memory: the run took|^\| [0-9]" $O/b32-trace.txt | cut -c1-220 | head -40; el; pack
left 250 && (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" ROUNDS=3 timeout $((LIMIT - SECONDS - 70)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; grep -E "^plain|^a0|ratio|median" $O/spec.txt | cut -c1-120; grep -o "ids = plain\|differ$" $O/spec.txt | sort | uniq -c; el
for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done
pack
if left 70; then
  LS_AMX_AHEAD=2 timeout $((LIMIT - SECONDS - 3)) $B/layerstream bench "${B32[@]}" -n 128 > $O/b32-a2.txt 2>&1
  echo "width 32 (amx a2l0) rc=$?"; grep -E "^\| [0-9]" $O/b32-a2.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took" $O/b32-a2.txt | cut -c1-200; el
fi
finish
