#!/bin/bash
# Session 45, call 4: call 3 again, with the width routing's placement paying
# for the layers it moves (2nd commit of the session). The GPU tests of the
# paged cache and the hybrid plans; the width-32 run traced (-n 64, against
# calls 2 and 3); then issue 17's shape (-n 128) twice.
# Run: OUT=$OUT LIMIT=450 bash bench/results/raw-2026-12-06-s45/call4/run.sh $PWD
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-450}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
(cd $R && timeout 120 $B/ls_gpu_tests -d -tc="*paged*,cuda streaming: hybrid*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|ERROR|FATAL" $O/tests.txt | tail -8; el
wait $SYN; echo "synth rc=$?"; el
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32)
timeout 100 $B/layerstream bench "${B32[@]}" -n 64 --trace $O/t32.json > $O/b32-trace.txt 2>&1
echo "width 32 traced (-n 64) rc=$?"; xz -T4 $O/t32.json
grep -E "^\| [0-9]" $O/b32-trace.txt | cut -d"|" -f2-5,15-18; el; pack
for i in 1 2; do
  left 75 || break
  timeout 90 $B/layerstream bench "${B32[@]}" -n 128 > $O/b32-$i.txt 2>&1
  echo "width 32 run $i rc=$?"
  grep -E "^\| [0-9]" $O/b32-$i.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took" $O/b32-$i.txt | cut -c1-240; el; pack
done
finish
