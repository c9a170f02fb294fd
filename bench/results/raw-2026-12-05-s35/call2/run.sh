#!/bin/bash
# Session 35, call 2 (on the machine warm from call 1): session 34's calls 2
# and 3 in one call, the device time being short, and the A/B of the step
# inputs read by a kernel (CudaBackendOptions::inputs_by_kernel, new this
# session; LS_STEP_INPUTS=copy is the old path).
#  (1) bench --batch 1,8,32 on the tied 70b at 24 GiB, five settings, a
#      trace each: the defaults with LS_HIDDEN_READ=kernel (the direct tile,
#      the searched placement, the step inputs by kernel); then one of them
#      off at a time: the step inputs copied, the hidden state copied (the
#      default until now), the direct tile off, the placement off.
#  (2) issue 14's CPU attention at 1k-16k (session 34's call 3 in two rounds
#      instead of four) and the timeline at 1k.
# Run: OUT=$OUT timeout 560 bash bench/results/raw-2026-12-05-s35/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M $O/batch $O/attn
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
for set in "1 1 kernel kernel" "1 1 copy kernel" "1 1 kernel copy" "0 1 kernel kernel" "1 0 kernel kernel"; do
  read d p si hr <<< "$set"
  n=d$d-p$p-in$si-h$hr
  LS_HIDDEN_READ=$hr LS_STEP_INPUTS=$si LS_GEMM_DIRECT=$d LS_WIDTH_PLACE=$p timeout 75 $B/layerstream bench "${A[@]}" --batch 1,8,32 --prompt-tokens 128 -n 20 -c 256 --stats --trace $O/batch/t-$n.json > $O/batch/b-$n.txt 2>&1
  echo "batch $n rc=$?"; grep -E "^\| [0-9]" $O/batch/b-$n.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/batch/b-$n.txt | cut -c1-300
  [ -f $O/batch/t-$n.json ] && xz -T8 $O/batch/t-$n.json; el
done
(cd $O/batch && tar -czf out.tgz b-*.txt && rm -f b-*.txt)
# Session 34's call 3 with its rounds cut to two (1: LS_POOL_PAUSE_US=0, 2: 50).
sed 's/for r in 1 2 3 4; do/for r in 1 2; do/' $R/bench/results/raw-2026-12-05-s34/call3/run.sh > /tmp/call3.sh
OUT=$O/attn timeout 150 bash /tmp/call3.sh $R
echo "attention part rc=$?"; el
