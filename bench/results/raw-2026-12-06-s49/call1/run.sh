#!/bin/bash
# Session 49 call 1: two changes to the resident decode, each A/B in the same
# call: the row kernel of one token's short rows (kernels/attention_decode_row.cuh;
# off: LS_ATTENTION_ROW=0, the grouped kernel's 16 splits and their reduce
# pass) and chained greedy steps (Backend::can_chain; off: LS_CHAIN_STEPS=0).
# Their GPU tests; the attention alone at 16-256 positions; the resident 8b
# Q4_K_M decode in alternated rounds of the three forms (bench's
# device-memory bound beside each), after a 200-token prompt too; a trace of
# each end's default decode for the GPU's idle time between steps.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-06-s49/call1/run.sh $PWD   (timeout 570)
# (carry .gpubin/bin.txz, from scripts/gpu_pack.sh at this tree)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-540}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth rc=$?" >> $O/synth.txt ) &
SYN=$!
(cd $R && timeout 200 $B/ls_gpu_tests -tc="*attention*,decode fused*,*chained*" > $O/tests-att.txt 2>&1)
echo "attention and chain tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests-att.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-att.txt | head -60; el; pack
wait $SYN; cat $O/synth.txt; el
timeout 60 $B/ls_bench_attention 5,6 --short > $O/bench-att.txt 2>&1; echo "bench_attention rc=$?"
cut -c1-260 $O/bench-att.txt; el; pack
form() {  # 0: neither, 1: the row kernel, 2: the row kernel and chained steps
  case $1 in 0) echo "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0";; 1) echo "LS_CHAIN_STEPS=0";; 2) echo "LS_X=1";; esac
}
for r in 1 2; do
  for v in 0 1 2; do
    env $(form $v) timeout 60 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-f$v-$r.txt 2>&1
    echo "8b form $v round $r: $(rate $O/b8-f$v-$r.txt)"
  done
done
grep "device memory bound" $O/b8-f2-1.txt | cut -c1-200; el; pack
for v in 0 1 2; do
  env $(form $v) timeout 60 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 200 -n 48 > $O/b8p200-f$v.txt 2>&1
  echo "8b after 200, form $v: $(rate $O/b8p200-f$v.txt)"
done; el; pack
for v in 0 2; do
  env $(form $v) timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --trace $O/trace-f$v.json --stats > $O/stats-f$v.txt 2>&1
  echo "traced decode form $v rc=$?"; timeout 60 $L trace summarize $O/trace-f$v.json --from-step 5 > $O/trace-sum-f$v.txt 2>&1
  head -30 $O/trace-sum-f$v.txt; xz -9 $O/trace-f$v.json
done; el; pack
(cd $R && timeout $((LIMIT - SECONDS - 10)) $B/ls_gpu_tests -tc="cuda backend*,cuda kv*,*pipeline*" > $O/tests-be.txt 2>&1)
echo "backend tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests-be.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-be.txt | head -40; el
finish
