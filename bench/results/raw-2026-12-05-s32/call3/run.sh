#!/bin/bash
# Session 32, call 3: the chunk form against the lane form where users run
# the 70b at 24 GiB: decode at width 1 (a short prompt, 64 greedy tokens),
# three rounds alternated, then bench --batch 32 once each.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s32/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
F=$M/70b.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"
for r in 1 2 3; do
  for v in default LS_CPU_Q8_FORM=chunks; do
    E=(); [ $v != default ] && E=($v)
    env "${E[@]}" timeout 80 $B/layerstream decode -m $F --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" -n 64 --temp 0 --stats > $O/dec-$r-${v//=/-}.out 2> $O/dec-$r-${v//=/-}.err
    echo "decode round $r $v rc=$? $(grep -o 'generated [0-9]* tokens, [0-9.]* tok/s' $O/dec-$r-${v//=/-}.err) $(grep -o 'width <= 1: [^;]*' $O/dec-$r-${v//=/-}.err | head -1)"
  done
done; el
for v in default LS_CPU_Q8_FORM=chunks; do
  E=(); [ $v != default ] && E=($v)
  env "${E[@]}" timeout 90 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 32 --prompt-tokens 128 -n 24 -c 256 --stats > $O/b32-${v//=/-}.txt 2>&1
  echo "batch 32 $v rc=$?"; grep -E "^\| [0-9]" $O/b32-${v//=/-}.txt | cut -d"|" -f1-5,15-20
done; el
cd $O && tar -czf out.tgz dec-* b32-* && rm -f dec-* b32-*
