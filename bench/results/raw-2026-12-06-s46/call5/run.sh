#!/bin/bash
# Session 46, call 5: issue 20's --act q8 line against the bound the GPU test
# states (max |Δlogit| <= 2e-2 of max |logit| while the ids agree, a first
# difference only at a near tie of that size; 1e-3 with f32): the GPU test
# itself, now over all 15 types (q5_k_m added), then scripts/logits_compare.py
# over 64 greedy tokens of the tiny preset of every type and the 1b at Q4_K_M
# and Q8_0 (call 3's runs, judged then against a bound of 0.01 of the row's
# std, which the q8 rounding alone exceeds: call 4).
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-06-s46/call5/run.sh $PWD  (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-200}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda backend: logits and 64 greedy tokens match the CPU backend*" -s 2>&1 | grep -E "cuda vs cpu|diverge|test cases|assertions|ERROR" > $O/gputest.txt)
cut -c40-230 $O/gputest.txt; el; pack
L=$B/layerstream; C="python3 $R/scripts/logits_compare.py"
IDS="1 15 27 300 41 77 123 9"
check() {  # model label
  for act in f32 q8; do
    for be in cpu cuda; do
      timeout 60 $L logits -m $1 --ids "$IDS" --greedy 64 --greedy-logits /tmp/$be.bin --act $act \
        --kv-type f16 --backend $be > /tmp/$be.txt 2> $O/err-$2-$act-$be.txt || echo "$2 $act $be rc=$?"
    done
    local rel=2e-2; [ $act = f32 ] && rel=1e-3
    echo "$2 act $act: $($C /tmp/cpu.txt /tmp/cpu.bin /tmp/cuda.txt /tmp/cuda.bin --rel $rel; echo " (rc $?)")"
  done
}
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q > /dev/null 2>&1 || echo "synth $q failed"
  check $M/tiny-$q.gguf tiny-$q
done | tee $O/ids.txt; el; pack
IDS="1 1500 2700 30000 4100 7700 12300 900"
for q in q4_k_m q8_0; do
  timeout 60 $L synth -q -o $M/1b-$q.gguf --preset 1b --quant $q > /dev/null 2>&1 || echo "synth 1b $q failed"
  left 40 && check $M/1b-$q.gguf 1b-$q; rm -f $M/1b-$q.gguf
done | tee -a $O/ids.txt; el; pack
finish
