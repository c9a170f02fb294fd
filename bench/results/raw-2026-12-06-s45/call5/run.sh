#!/bin/bash
# Session 45, call 5 (the record): GPU tests of the paged cache, the row
# moves (read_kv_spans) and hybrid plans; issue 17's shape three times;
# issue 18's replay rounds in the time left.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-06-s45/call5/run.sh $PWD
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-540}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
(cd $R && timeout 120 $B/ls_gpu_tests -d -tc="*paged*,cuda streaming: hybrid*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|ERROR|FATAL" $O/tests.txt | tail -8; el
wait $SYN; echo "synth rc=$?"; el
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128)
for i in 1 2 3; do
  left 250 || break
  timeout 90 $B/layerstream bench "${B32[@]}" > $O/b32-$i.txt 2>&1
  echo "width 32 run $i rc=$?"; [ $i = 1 ] && grep -E "tier plan|activations and logits" $O/b32-$i.txt | head -2
  grep -E "^\| [0-9]" $O/b32-$i.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took|hybrid re-planning" $O/b32-$i.txt | cut -c1-240; el; pack
done
spec_rounds 3
finish
