#!/bin/bash
# Session 33, call 2: where a hybrid step's time goes at widths 1, 8 and 32
# (issues 17 and 18: measured steps are 0.81-0.92 of the width routing's
# simulation, and gpu-copy idles 20-30 %). Synthetic 70b Q4_K_M at 24 GiB,
# default flags: a Chrome trace each of decode (width 1) and bench --batch
# 8 and 32 (128-token prompts), with --stats and the warm steps' table.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s33/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
F=$M/70b.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
timeout 120 $B/layerstream decode "${A[@]}" -p "Once upon a time" -n 40 --temp 0 --no-display-prompt --stats --trace $O/t1.json > /dev/null 2> $O/t1.err
echo "decode rc=$?"; grep -E "generated|^bound|CPU tier|layers:" $O/t1.err | cut -c1-200; el
for w in 8 32; do
  timeout 200 $B/layerstream bench "${A[@]}" --batch $w --prompt-tokens 128 -n 24 -c 256 --stats --trace $O/t$w.json > $O/b$w.txt 2>&1
  echo "batch $w rc=$?"; grep -E "^\| [0-9]|CPU tier by width|^layers:" $O/b$w.txt | cut -c1-200; el
done
for t in 1 8 32; do
  echo "== trace $t, from step 8"; timeout 60 $B/layerstream trace summarize $O/t$t.json --from-step 8 2>&1 | head -20
done; el
cd $O && ls -la && xz -T8 t1.json t8.json t32.json && tar -czf out.tgz t1.err b8.txt b32.txt && rm -f t1.err b8.txt b32.txt && ls -la
