#!/bin/bash
# Session 9, call 4: the GPU tests; --draft self on CUDA (greedy identity on
# the trained target); the 70b at widths 8 and 32, the binary before this
# session's weight-pack change (s9bin2) against the one after (s9bin4),
# alternated in one call.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m9; mkdir -p $M /tmp/old /tmp/new
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s9bin2.txz -C /tmp/old && tar -xJf .gpubin/s9bin4.txz -C /tmp/new || exit 2
L=/tmp/new/layerstream
timeout 240 /tmp/new/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"; tail -4 $O/gpu-tests.txt; grep -c SKIPPED $O/gpu-tests.txt; el
K="--backend cuda -m model/weights/kjv-target-q8_0.gguf -p In_the_beginning -n 128 --temp 0 --ids --no-display-prompt"
$L decode $K > $O/kjv-plain.txt 2> $O/kjv-plain.err
for d in self:5,8 self:8; do
  $L decode $K --draft $d > $O/kjv-$d.txt 2> $O/kjv-$d.err
  cmp -s <(tail -1 $O/kjv-plain.txt) <(tail -1 $O/kjv-$d.txt) && s=IDENTICAL || s=DIFFERENT
  echo "--draft $d: $s | $(grep -o 'speculative.*' $O/kjv-$d.err) | $(grep -o 'generated.*tok/s' $O/kjv-$d.err)"
done
echo "plain: $(grep -o 'generated.*tok/s' $O/kjv-plain.err)"; el
[ -f $M/70b.gguf ] || timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for v in old new old new; do
  [ $(($(date +%s) - t0)) -gt 480 ] && break
  timeout 100 /tmp/$v/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 8,32 --prompt-tokens 128 -n 32 -c 256 > $O/w-$v.txt 2>&1
  echo "$v: $(grep -E '^\| (8|32) ' $O/w-$v.txt | cut -d'|' -f2,5,12,14,18 | tr '\n' ';')"; el
done
tar -cJf $OUT/s9call4.txz -C $O . && rm -rf $O
