#!/bin/bash
# Session 41, call 1: the lane form with fused multiply-adds (its float step
# 6 -> 4 vector operations a block; base = the binary before, 65481aa) and
# the streamed int8 GEMM at decode widths (LS_MMQ_DECODE=1, session 40's
# table), measured in the engine.
#  1. the CPU GEMM's bits on the tile unit (AMX hardware against the
#     emulation and the dot); the GPU tests of session 40 (split group,
#     graphs, the pipeline's batch test) while the 70b is written;
#  2. issue 18's replay (K = 7, acceptance 0.7) with the new binary: the GEMV
#     at decode widths (LS_MMQ_DECODE=0, the default) against the int8 GEMM
#     there (=1), alternated, two rounds;
#  3. the CPU GEMM at 8 and 32 tokens, 16 threads, 70b shapes: base against
#     fma, alternated (between the replay's rounds); then width 32.
# (base.txz holds only the old ls_bench_cpu_matmul: two layerstream binaries
# and the tree do not fit the call's 64 MiB.)
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s41/call1/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; BB=/tmp/base; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
# The output so far, packed after each phase (a call cut short keeps it).
pack() { (cd $OUT && tar -czf out.tgz r); }
mkdir -p $B $BB $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
tar -xJf $R/.gpubin/base.txz -C $BB || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 220 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 60 $B/ls_unit_tests -tc="*gemm*,*amx*,*q8*,*dot*" > $O/unit-cpu.txt 2>&1)
echo "cpu unit rc=$?"; grep -E "test cases|assertions|Status|FAILED|ERROR" $O/unit-cpu.txt | tail -5; el
(cd $R && timeout 60 $B/ls_gpu_tests -tc="cuda matmul: decode widths*,cuda backend: decode through CUDA graphs*" -d > $O/tests.txt 2>&1)
echo "gpu tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests.txt | tail -6; el
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
wait $SYN; echo "synth rc=$?"; el; pack
spec() {
for r in "$@"; do for v in gemv mmq; do
  left 60 || break
  X=$B; E="LS_MMQ_DECODE=1"; [ $v = gemv ] && E="LS_MMQ_DECODE=0"
  (cd $R && env $E BIN=$X OUT=/tmp/spec-$v-$r MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout $((LIMIT - SECONDS)) bash scripts/gpu_speculative_check.sh > $O/spec-$v-$r.txt 2>&1)
  echo "spec $v ($E) round $r rc=$?"; cut -c1-160 $O/spec-$v-$r.txt | grep -E "^plain|^a0|ratio|CPU tier by width"; el
  cp /tmp/spec-$v-$r/a0.7-k7.err $O/spec-$v-$r-k7.err 2>/dev/null; pack
done; done
}
spec 1
left 70 && { for r in 1 2; do for v in base fma; do
  X=$B; [ $v = base ] && X=$BB
  timeout 40 $X/ls_bench_cpu_matmul --threads 16 --ntok 8 --direct on --amx off,on --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 7 --weights-gib 4 > $O/mm-$v-$r.txt 2>&1
  timeout 25 $X/ls_bench_cpu_matmul --threads 16 --ntok 32 --amx on --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 5 --weights-gib 4 >> $O/mm-$v-$r.txt 2>&1
  echo "cpu gemm $v round $r rc=$?"; grep -E "^q[46]_K" $O/mm-$v-$r.txt | awk '{print $1, $2, $3, $4, $6, $(NF-6), $(NF-3), $NF}' | tr '\n' ';'; echo
done; done; el; }
pack
spec 2
if left 50; then
  LS_MMQ_DECODE=1 timeout 48 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 64 > $O/b32.txt 2>&1
  echo "width 32 rc=$?"; grep -E "^\| [0-9]" $O/b32.txt | cut -d"|" -f2-5,15-18; grep "CPU tier by width" $O/b32.txt | cut -c1-200; el
fi
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
