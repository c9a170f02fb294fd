#!/bin/bash
# Session 54, call 9: issue 20, the 8b Q4_K_M resident decode with two new
# A/B switches: the direct GEMV's weight loads with the streaming hint
# (LS_GEMV_STREAM=1: ld.global.cs) and the L2's fetch granularity
# (LS_L2_FETCH=128). The new binary's direct GEMVs also compile to fewer
# registers by default (Q4_K 80 against 109: ptxas, scripts/kernel_regs.py),
# so the base binary (f3af8ba's layerstream, .gpubin/bin-base.txz) runs
# beside it. The tree and both binaries exceed what a call carries, so two
# calls on one warm machine: PHASE=new (carry .gpubin/bin.txz): the new
# binary's four settings alternated, three rounds, and the GPU tests of the
# GEMVs with the hint on and off; PHASE=base (carry .gpubin/bin-base.txz,
# the new binary still in /tmp/b from the first): base against new,
# alternated, three rounds, then 8b Q8_0 (staged GEMV: only the fetch
# applies) base, new, new with the fetch at 128.
# Call 13 (the staged GEMV's cp.async under an L2 evict-first policy; base
# acf9fb3): PHASE=new (tests), then ROUNDS=1 Q80_ROUNDS=4 PHASE=base.
# Call 12 (.L2::256B on the direct loads; the base is now call 11's new
# binary, acf9fb3): as call 11.
# Call 11 (the L2 fetch at 128 by default): SKIP_RUNS=1 SKIP_TESTS=1
# PHASE=new (unpack only), then ROUNDS=5 LONG=1 PHASE=base (also after a
# 16k prompt, base and new, one each).
# Call 10 (the hint always on, no switch; the same registers as the base):
# SKIP_RUNS=1 PHASE=new (tests only), then WITH_L2F=1 PHASE=base.
# Run: PHASE=new OUT=$OUT LIMIT=400 bash bench/results/raw-2026-12-07-s54/call9/run.sh $PWD
#      (timeout 430; carry .gpubin/bin.txz), then PHASE=base (carry .gpubin/bin-base.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-400}
. "$R/scripts/gpu_call_lib.sh"
PHASE=${PHASE:-new}
B0=/tmp/b0; mkdir -p $M $O
if [ $PHASE = new ]; then
  unpack_bins
else
  mkdir -p $B0; tar -xJf "$R/.gpubin/bin-base.txz" -C $B0 || exit 2
  [ -x $B/layerstream ] || { echo "no new binary in $B: run PHASE=new first on this machine"; exit 2; }
  nvidia-smi --query-gpu=name --format=csv,noheader; el
fi
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1
echo "synth rc=$?"; el
S=("$B0/layerstream|LS_X=1" "$B/layerstream|LS_X=1" "$B/layerstream|LS_GEMV_STREAM=1"
   "$B/layerstream|LS_L2_FETCH=128" "$B/layerstream|LS_GEMV_STREAM=1 LS_L2_FETCH=128")
N=(base new new-stream new-l2f128 new-both)
runs() {  # model tag rounds settings...
  local m=$1 tag=$2 rounds=$3 r i; shift 3
  for r in $(seq $rounds); do
    for i in "$@"; do
      left 25 || return 0
      local bin=${S[$i]%%|*} env=${S[$i]#*|} f=$O/$tag-${N[$i]}-$r.txt
      env $env timeout 60 $bin bench -m $m -n 128 > $f 2>&1
      echo "$tag round $r ${N[$i]}: $(rate $f)"
    done
  done
}
if [ $PHASE = new ]; then
[ -n "${SKIP_RUNS:-}" ] || { runs $M/8b-q4_k_m.gguf q4km 3 1 2 3 4; el; pack; }
[ -n "${SKIP_TESTS:-}" ] || left 120 && [ -z "${SKIP_TESTS:-}" ] && {
  timeout 60 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*,decode fused*,cuda matmul: model-sized*" > $O/tests.txt 2>&1
  echo "tests rc=$?"; grep -E "test cases|assertions" $O/tests.txt
  LS_GEMV_STREAM=1 timeout 60 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*,decode fused*,cuda matmul: model-sized*" > $O/tests-stream.txt 2>&1
  echo "tests (stream) rc=$?"; grep -E "test cases|assertions" $O/tests-stream.txt; el; pack
}
else
runs $M/8b-q4_k_m.gguf q4km ${ROUNDS:-3} 0 1 ${WITH_L2F:+3}; el; pack
[ -n "${LONG:-}" ] && left 90 && {
  for i in 0 1; do
    f=$O/q4km16k-${N[$i]}.txt
    env ${S[$i]#*|} timeout 80 ${S[$i]%%|*} bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $f 2>&1
    echo "q4km after 16k ${N[$i]}: $(rate $f)"
  done; el; pack
}
left 100 && {
  timeout 90 $B/layerstream synth -q -o $M/8b-q8_0.gguf --preset 8b --quant q8_0 > $O/synth8.txt 2>&1
  echo "synth q8_0 rc=$?"; runs $M/8b-q8_0.gguf q80 ${Q80_ROUNDS:-2} 0 1 3; el
}
fi
finish
