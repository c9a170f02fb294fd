#!/bin/bash
# Session 35, call 2: the GPU tests of the changes since call 1, then
# session 34's calls 2 and 3 in one call, the device
# time being short, with the A/B of the step inputs read by a kernel
# (CudaBackendOptions::inputs_by_kernel, new this session) and of the
# hidden state read by a kernel (LS_HIDDEN_READ=kernel, the default from
# this session's binary on).
#  bench --batch 1,8,32 on the tied 70b at 24 GiB, a trace each: the
#  defaults with LS_HIDDEN_READ=kernel (the direct tile, the searched
#  placement, the step inputs by kernel), then one of them off at a time:
#  the step inputs copied, the hidden state copied (today's default), the
#  direct tile off, the placement off; between them, issue 14's CPU
#  attention at 1k-16k (session 34's call 3, one round a part) and the
#  timeline at 1k. Each part runs only while the call has time for it
#  (LIMIT seconds in all), its results saved as it ends.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s35/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
mkdir -p $B $M $O/batch $O/attn
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
# First the GPU tests of what changed after session 35's call 1 (the KV block
# table read by a kernel; the hidden state by kernel as the default).
mkdir -p $R/.ut && (cd $R/.ut && timeout 150 $B/ls_gpu_tests -tc="cuda ops: a step*,cuda streaming*,cuda pipeline batch*,cuda kv paged*,cuda backend*" > /tmp/gpu.txt 2>&1)
echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" /tmp/gpu.txt | head; (cd /tmp && tar -rf $O/attn/a.tar gpu.txt); el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
batch() {  # direct placement inputs hidden
  local n=d$1-p$2-in$3-h$4
  left 80 || { echo "batch $n: no time left"; return; }
  LS_GEMM_DIRECT=$1 LS_WIDTH_PLACE=$2 LS_STEP_INPUTS=$3 LS_HIDDEN_READ=$4 timeout 75 $B/layerstream bench "${A[@]}" --batch 1,8,32 --prompt-tokens 128 -n 20 -c 256 --stats --trace $O/batch/t-$n.json > /tmp/b-$n.txt 2>&1
  echo "batch $n rc=$?"; grep -E "^\| [0-9]" /tmp/b-$n.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" /tmp/b-$n.txt | cut -c1-300
  (cd /tmp && tar -rf $O/batch/b.tar b-$n.txt)
  [ -f $O/batch/t-$n.json ] && xz -T8 $O/batch/t-$n.json; el
}
f() { grep -E "^ +[0-9]+ +16 " $1 | awk '{print $1, $5, $7, $10 " us", $15}'; }
attn() {  # round, LS_POOL_PAUSE_US
  left 60 || { echo "attention round $1: no time left"; return; }
  LS_POOL_PAUSE_US=$2 timeout 90 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > /tmp/all-$1.txt 2>&1
  echo "contexts round $1 LS_POOL_PAUSE_US=$2 rc=$?"; f /tmp/all-$1.txt | tr '\n' ';'; echo
  LS_POOL_PAUSE_US=$2 timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --block 0,256 --start claim,static --reps 41 > /tmp/blk-$1.txt 2>&1
  echo "blocks round $1 rc=$?"; f /tmp/blk-$1.txt | tr '\n' ';'; echo
  (cd /tmp && tar -rf $O/attn/a.tar all-$1.txt blk-$1.txt); el
}
batch 1 1 kernel kernel
batch 1 1 copy kernel
attn 1 0
batch 1 1 kernel copy
if left 40; then
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --start claim,static --reps 201 --timeline > /tmp/tl.txt 2>&1
  echo "timeline rc=$?"; grep -E "k1v2n|timeline|calls where" /tmp/tl.txt | cut -c1-250; (cd /tmp && tar -rf $O/attn/a.tar tl.txt); el
fi
batch 0 1 kernel kernel
batch 1 0 kernel kernel
attn 2 50
# If time is left: the replay check with K chosen (SpecK weighs fewer widths
# since this session) beside K = 7 and plain decoding.
if left 130; then
  (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=64 KS=" " ALPHA_KS="0 7" timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
  echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
fi
ls -la $O/batch $O/attn
