#!/bin/bash
# The next session's first call (written in session 45): what closes issue 17,
# then issue 18.
#  1. GPU tests at HEAD while the 70b is written (TESTS_S, default 200 s):
#     the 32 sequences each equal to the sequence alone (tiny, 1b), the paged
#     cache (read_kv_spans / write_kv_spans), the hybrid plans;
#  2. issue 17's shape three times (the host's CPU tier decides the bound:
#     print the per-layer times beside the figure);
#  3. one traced run (-n 64): the first decode steps' row moves, both ways
#     ("kv to cpu", "kv from cpu"), against session 45's call 4;
#  4. issue 18: two rounds, then one traced verify run (K = 7).
# Run: OUT=$OUT LIMIT=570 bash bench/results/raw-2026-12-06-s45/next/run.sh $PWD   (timeout 600)
# (carry .gpubin/bin.txz, repacked at HEAD by scripts/gpu_pack.sh)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
(cd $R && timeout ${TESTS_S:-200} $B/ls_gpu_tests -d -tc="cuda pipeline*,*paged*,cuda streaming: hybrid*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|ERROR|FATAL" $O/tests.txt | tail -12; el
wait $SYN; echo "synth rc=$?"; el; pack
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32)
for i in 1 2 3; do
  left 250 || break
  timeout 90 $B/layerstream bench "${B32[@]}" -n 128 > $O/b32-$i.txt 2>&1
  echo "width 32 run $i rc=$?"; [ $i = 1 ] && grep -E "tier plan|activations and logits" $O/b32-$i.txt | head -2
  grep -E "^\| [0-9]" $O/b32-$i.txt | cut -d"|" -f2-5,13-18; grep -E "CPU tier by width|device memory: the run took|hybrid re-planning" $O/b32-$i.txt | cut -c1-240; el; pack
done
if left 230; then
  timeout 90 $B/layerstream bench "${B32[@]}" -n 64 --trace $O/t32.json > $O/b32-trace.txt 2>&1
  echo "width 32 traced rc=$?"; xz -T4 $O/t32.json
  (cd $R && python3 scripts/trace_steps.py $O/t32.json.xz --from-step 10 2>&1 | sed -n '1p;$p')
  grep -E "^\| [0-9]" $O/b32-trace.txt | cut -d"|" -f2-5,15-18; el; pack
fi
spec_rounds 2
# One traced verify run (K = 7): where a verify step's time goes on this host
# (issue 18's lever: the CPU tier's chain, the copies, or the GPU's layers).
if left 100 && [ -f /tmp/spec/plain.ids ]; then
  timeout 90 $B/layerstream decode -m $F --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" \
    -n 64 --temp 0 --ids --no-display-prompt --draft replay:/tmp/spec/plain.ids:0.7 --draft-min 7 \
    --draft-max 7 --stats --trace $O/tspec.json > $O/spec-trace.txt 2> $O/spec-trace.err
  echo "traced verify run rc=$?"; xz -T4 $O/tspec.json
  (cd $R && python3 scripts/trace_steps.py $O/tspec.json.xz --from-step 5 2>&1 | head -9 | cut -c1-400)
  el; pack
fi
finish
