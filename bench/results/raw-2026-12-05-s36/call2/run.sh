#!/bin/bash
# Session 36, call 2 (not run in session 36: no device time left; for the
# next session): issue 18's replay check at N = 128 (plain; a width-8
# verify step at acceptance 1; K = 7 and K chosen at acceptance 0.7), then
# the A/B of the step's inputs read by a kernel against copied
# (LS_STEP_INPUTS) and of the hidden state (LS_HIDDEN_READ) at widths 1, 8
# and 32, a trace each, then issue 14's CPU attention, while LIMIT lasts.
# Makes the 70b file if the machine does not have it (~30 s). Its plan
# lines show the calibration's ratio at 8 tokens (new in session 36).
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s36/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
mkdir -p $B $M $O/batch
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
(cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS="7" ALPHA_KS="7 0" timeout $((LIMIT - SECONDS - 170)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-240 $O/spec.txt
# The calibration's new ratio at 8 tokens (session 36, never run on a GPU before).
grep -ho "largest layer[^)]*)" /tmp/spec/*.err | head -4; (cd /tmp && tar -czf $O/spec-err.tgz spec/*.err); el
cd /tmp
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
batch() {  # inputs hidden
  local n=in$1-h$2
  left 80 || { echo "batch $n: no time left"; return; }
  LS_STEP_INPUTS=$1 LS_HIDDEN_READ=$2 timeout 75 $B/layerstream bench "${A[@]}" --batch 1,8,32 --prompt-tokens 128 -n 20 -c 256 --stats --trace $O/batch/t-$n.json > /tmp/b-$n.txt 2>&1
  echo "batch $n rc=$?"; grep -E "^\| [0-9]" /tmp/b-$n.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" /tmp/b-$n.txt | cut -c1-300
  (cd /tmp && tar -rf $O/batch/b.tar b-$n.txt)
  [ -f $O/batch/t-$n.json ] && xz -T8 $O/batch/t-$n.json; el
}
batch kernel kernel
batch copy kernel
batch kernel copy
# Issue 14's last line (the CPU attention at 1k reading >= 0.70 of the host
# bandwidth), not reached in session 36's call 1.
if left 70; then
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > $O/attn.txt 2>&1
  echo "attention rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn.txt | awk '{print $1, $5, $7, $10 " us", $15}'; el
fi
ls -la $O $O/batch
