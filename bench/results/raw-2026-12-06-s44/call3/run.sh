#!/bin/bash
# Session 44, call 3 (the session's last: ~930 s of device time left).
#  1. Issue 17's shape after the step cap (a step holds at most
#     --ubatch-size tokens, what the plan sized the activations for; call 2's
#     trace: prefill steps of 1,152 and 2,944 tokens grew them 1.1-1.4 GiB
#     past the plan): the device memory the run took against the plan,
#     LS_DEVMEM_TRACE=1 on the first run; and the AMX forms a1l0 (default)
#     and a2l0 (LS_AMX_AHEAD=2) alternated, two runs each, 128 new tokens.
#  2. Issue 18 with the time left: rounds of plain, K = 7 and K chosen.
# Run: OUT=$OUT LIMIT=560 bash (timeout 600) bench/results/raw-2026-12-06-s44/call3/run.sh $PWD
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
wait $SYN; echo "synth rc=$?"; el
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128)
i=0
for f in a1l0 a2l0 a1l0 a2l0; do
  i=$((i + 1)); left 75 || break
  tr=0; [ $i = 1 ] && tr=1
  LS_DEVMEM_TRACE=$tr LS_AMX_AHEAD=${f:1:1} timeout 90 $B/layerstream bench "${B32[@]}" > $O/b32-$i-$f.txt 2>&1
  echo "width 32 run $i (amx $f) rc=$?"
  [ $i = 1 ] && grep -E "^devmem|activations|tier plan" $O/b32-$i-$f.txt | cut -c1-200
  grep -E "^\| [0-9]" $O/b32-$i-$f.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took" $O/b32-$i-$f.txt | cut -c1-240; el; pack
done
R1=$(( (LIMIT - SECONDS - 15) / 80 )); [ $R1 -gt 3 ] && R1=3
if [ $R1 -ge 1 ]; then
  (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" ROUNDS=$R1 timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
  echo "spec ($R1 rounds) rc=$?"; grep -E "^plain|^a0|ratio|median" $O/spec.txt | cut -c1-120; grep -o "ids = plain\|differ$" $O/spec.txt | sort | uniq -c; el
  for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done
fi
finish
