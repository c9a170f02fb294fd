#!/bin/bash
# Session 46, call 4: why CUDA and the CPU differ with --act q8 by about as
# much as q8 differs from f32 (call 3: 0.013-0.036 of a logits row's std on
# the tiny models of the int8 types, 0.09-0.11 on the 1b), where one format
# and one rounding on both sides should leave only rare last-bit flips.
# Localize: layers 0/1/2, one prompt token, each backend against its own f32,
# and the CUDA paths' switches; then the GPU test that states the bound.
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-06-s46/call4/run.sh $PWD  (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-200}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream; C="python3 $R/scripts/logits_compare.py"
run() {  # model ids n be act out [env...]
  local m=$1 ids=$2 n=$3 be=$4 act=$5 out=$6; shift 6
  env "$@" timeout 60 $L logits -m $m --ids "$ids" --greedy $n --greedy-logits /tmp/$out.bin --act $act \
    --kv-type f16 --backend $be > /tmp/$out.txt 2>> $O/err.txt || echo "run $out rc=$?"
}
cmp() { echo "$1: $($C /tmp/$2.txt /tmp/$2.bin /tmp/$3.txt /tmp/$3.bin)"; }
{
for q in q8_0 q4_k; do
  for nl in 1 2; do
    timeout 30 $L synth -q -o $M/t$nl-$q.gguf --preset tiny --quant $q --layers $nl > /dev/null 2>&1
    for be in cpu cuda; do for a in q8 f32; do run $M/t$nl-$q.gguf "1" 2 $be $a $be-$a; done; done
    cmp "$q $nl layer(s), 1 token: cuda q8 / cpu q8" cuda-q8 cpu-q8
    cmp "$q $nl layer(s), 1 token: cpu q8 / cpu f32" cpu-q8 cpu-f32
    cmp "$q $nl layer(s), 1 token: cuda q8 / cuda f32" cuda-q8 cuda-f32
    cmp "$q $nl layer(s), 1 token: cuda f32 / cpu f32" cuda-f32 cpu-f32
  done
  timeout 30 $L synth -q -o $M/t-$q.gguf --preset tiny --quant $q > /dev/null 2>&1
  I="1 15 27 300 41 77 123 9"
  run $M/t-$q.gguf "$I" 8 cpu q8 cpu-q8
  for e in "X=0" "LS_GEMV_VERSION=2" "LS_MMQ=0" "LS_ATTENTION_TC=0" "LS_CUDA_GRAPHS=0"; do
    run $M/t-$q.gguf "$I" 8 cuda q8 cuda-q8 $e
    cmp "$q tiny, 8 tokens, $e: cuda q8 / cpu q8" cuda-q8 cpu-q8
  done
done
} 2>&1 | tee $O/localize.txt; el; pack
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda backend: logits and 64 greedy tokens match the CPU backend*" -s 2>&1 | grep -E "cuda vs cpu|diverge|test cases|assertions" > $O/gputest.txt)
cat $O/gputest.txt | cut -c1-200; el
finish
