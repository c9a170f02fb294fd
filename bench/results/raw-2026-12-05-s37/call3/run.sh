#!/bin/bash
# Session 37, call 3: the direct tile's prefetch of the next tile's rows
# (eb8e84d) on the Xeon, beside the binary before it (649fee2) in the same
# call: the CPU GEMM at 4 and 8 tokens on the 70b shapes (16 threads, from
# DRAM), then issue 18's replay check (plain, K = 7 at acceptance 1 and 0.7)
# with the new binary, the same K = 7 at 0.7 with the old, and widths 1, 8
# and 32 of issue 17's bench, while LIMIT lasts.
# Carry: .gpubin/bin.txz (new), .gpubin/old.txz (old).
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s37/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; BO=/tmp/bo; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
mkdir -p $B $BO $M
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
rm -rf $B/* $BO/*; tar -xJf $R/.gpubin/bin.txz -C $B && tar -xJf $R/.gpubin/old.txz -C $BO || exit 2
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?" ) &
SY=$!
# The GEMM A/B (the synth writes meanwhile: its page cache and CPU are noise
# here; the two binaries alternate, so both see it).
for r in 1 2; do
  for v in old new; do
    bin=$B; [ $v = old ] && bin=$BO
    timeout 60 $bin/ls_bench_cpu_matmul --threads 16 --ntok 4,8 --types q4_k,q6_k --act q8 --path gemm \
      --direct on --shapes 70b --weights-gib 4 --reps 5 > $O/mm-$v-$r.txt 2>&1
    echo "mm $v $r rc=$?"; grep -E "^q[46]_K" $O/mm-$v-$r.txt | awk '{printf "%s %s %s %s | ", $1, $2, $4, $16}'; echo
  done
done
el; wait $SY; el
S=/tmp/spec
(cd $R && BIN=$B OUT=$S MODELS=$M N=128 KS="7" ALPHA_KS="7" timeout $((LIMIT - SECONDS - 150)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
# The old binary's K = 7 at 0.7 on the same replay file.
if left 150; then
  timeout 90 $BO/layerstream decode -m $F --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" -n 128 --temp 0 --ids \
    --no-display-prompt --draft replay:$S/plain.ids:0.7 --draft-min 7 --draft-max 7 --stats > /tmp/old-k7.txt 2> $S/old-a0.7-k7.err
  echo "old a0.7-k7 rc=$? $(grep -o "generated [0-9]* tokens, [0-9.]* tok/s" $S/old-a0.7-k7.err) | $(grep -o "speculative.*" $S/old-a0.7-k7.err | head -1 | cut -c1-120)"
  grep -E "CPU tier by width" $S/old-a0.7-k7.err | cut -c1-200; el
fi
(cd /tmp && tar -czf $O/spec-err.tgz spec/*.err)
if left 80; then
  timeout 75 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 128 -n 20 -c 256 --stats > $O/batch.txt 2>&1
  echo "batch rc=$?"; grep -E "^\| [0-9]" $O/batch.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/batch.txt | cut -c1-300; el
fi
ls -la $O
