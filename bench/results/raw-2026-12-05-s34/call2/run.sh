#!/bin/bash
# Session 34, call 2 (after call 1, on a fresh or warm machine): bench
# --batch 8,32 on the tied 70b at 24 GiB (LS_HIDDEN_READ=kernel), three
# settings in one call: the direct tile and the searched placement of a
# wide step's CPU layers (WidthRouting::placement) both on (the defaults),
# the direct tile off, the placement off; a trace of each.
# Run: OUT=$OUT timeout 580 bash bench/results/raw-2026-12-05-s34/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LS_HIDDEN_READ=kernel
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
for set in "1 1" "0 1" "1 0"; do
  read d p <<< "$set"
  n=d$d-p$p
  LS_GEMM_DIRECT=$d LS_WIDTH_PLACE=$p timeout 120 $B/layerstream bench "${A[@]}" --batch 8,32 --prompt-tokens 128 -n 24 -c 256 --stats --trace $O/t-$n.json > $O/b-$n.txt 2>&1
  echo "batch LS_GEMM_DIRECT=$d LS_WIDTH_PLACE=$p rc=$?"; grep -E "^\| [0-9]" $O/b-$n.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/b-$n.txt | cut -c1-300
  [ -f $O/t-$n.json ] && xz -T8 $O/t-$n.json; el
done
cd $O && tar -czf out.tgz b-*.txt && rm -f b-*.txt; ls -la
