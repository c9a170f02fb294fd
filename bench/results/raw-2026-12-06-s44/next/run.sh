#!/bin/bash
# The next session's first call (written in session 44): the step cap and
# its widening shown on a GPU, then issues 17 and 18.
#  1. GPU tests of the backend, streaming and pipeline (TESTS_S, default
#     200 s) while the 70b is written;
#  2. a 4,000-token prompt on the 70b (-c 4096) at 24 GiB, default flags: the plan's
#     widened step (activations "for N tokens", widen_step_tokens), prefill
#     tok/s, decode after it, and the device memory the run took against the
#     plan (--stats); then the same with --ubatch-size 512 (the cap not
#     widened) beside it;
#  3. issue 17's shape, three runs (a step cap of about 1,024 now);
#  4. issue 18 with the time left: rounds of plain, K = 7 and K chosen.
# Run: OUT=$OUT LIMIT=570 bash (timeout 600) bench/results/raw-2026-12-06-s44/next/run.sh $PWD
# (carry .gpubin/bin.txz, repacked at HEAD by scripts/gpu_pack.sh)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
(cd $R && timeout ${TESTS_S:-200} $B/ls_gpu_tests -d -tc="cuda backend*,cuda streaming*,cuda pipeline*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|ERROR|FATAL" $O/tests.txt | tail -18; el
wait $SYN; echo "synth rc=$?"; el; pack
BASE=(-m $F --vram-budget 24GiB --ram-budget 48GiB --stats)
for ub in auto 512; do
  left 200 || break
  X=(); [ $ub != auto ] && X=(--ubatch-size $ub)
  LS_DEVMEM_TRACE=1 timeout 120 $B/layerstream bench "${BASE[@]}" "${X[@]}" --prompt-tokens 4000 -n 32 > $O/p4096-$ub.txt 2>&1
  echo "4,000-token prompt, ubatch $ub rc=$?"; grep -E "tier plan|activations and logits|^devmem|device memory: the run took|wider than the" $O/p4096-$ub.txt | cut -c1-200 | head -8
  grep -E "^\| [0-9]" $O/p4096-$ub.txt | cut -d"|" -f2-5 | head -3; el; pack
done
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128)
for i in 1 2 3; do
  left 200 || break
  timeout 90 $B/layerstream bench "${B32[@]}" > $O/b32-$i.txt 2>&1
  echo "width 32 run $i rc=$?"; [ $i = 1 ] && grep -E "tier plan|activations and logits" $O/b32-$i.txt | head -2
  grep -E "^\| [0-9]" $O/b32-$i.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took" $O/b32-$i.txt | cut -c1-240; el; pack
done
spec_rounds 3
finish
