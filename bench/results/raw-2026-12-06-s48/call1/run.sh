#!/bin/bash
# Session 47 call 5: the tensor-core decode attention's tiles as bulk copies
# on mbarriers (AttentionParams::tc_bulk, LS_ATTENTION_TC_BULK) against
# 16-byte cp.async: the GPU tests of the attention kernels (both forms), the
# fused decode and the cuda/cpu comparison; the kernel alone at 256-32k
# (ls_bench_attention 5 --shape 8b), interleaved, two
# rounds; ncu's instruction count and time at 16k; the 8b Q4_K_M decode
# after 16,000 tokens; then the resident 8b at a short context (issue 20).
# First ls_bench_kv_read's bare read as cp.async and as bulk copies at 16k.
# RAN in session 48 (call 1, H100), from the patch applied to 37e1d2a; results in
# bench/results/2026-12-06-s48.md. Before that: NOT RUN in session 47. The change is raw-2026-12-06-s47/call5/
# tc-bulk.patch: `git apply` it, run scripts/gpu_pack.sh
# (its pack holds ls_bench_attention since session 47), then
#   OUT=$OUT LIMIT=330 bash bench/results/raw-2026-12-06-s47/call5/run.sh $PWD
# with carry [".gpubin/bin.txz"], timeout 360. Keep the change only if the
# GPU tests pass and it is faster.
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-330}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
(cd $R && timeout 120 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda ops: the tensor-core*,decode fused*,cuda backend: logits and 64*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "test cases|assertions|Status|ERROR|FAILED" $O/tests.txt | head -8; el; pack
timeout 90 $B/ls_bench_kv_read --ctx 16384 > $O/kvread.txt 2>&1; echo "kv_read rc=$?"; grep -E "rows" $O/kvread.txt
for r in 1 2; do for bk in 1 0; do
  LS_ATTENTION_TC_BULK=$bk timeout 60 $B/ls_bench_attention 5 --shape 8b > $O/attn-$bk-$r.txt 2>&1
  echo "bulk=$bk round $r:"; grep -E "ctx" $O/attn-$bk-$r.txt | sed -E 's/\| k5tc fix.*\| k5tc dyn/| dyn/; s/\| k5 fix.*\| k5 dyn/| dyn/' | cut -c1-100
done; done; el; pack
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for bk in 1 0; do
  LS_ATTENTION_TC_BULK=$bk timeout 60 $NCU --kernel-name regex:attention_decode_tc --launch-skip 260 --launch-count 1 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $B/ls_bench_attention 5 --shape 8b --ctx 16384 > $O/ncu-$bk.txt 2>&1
  echo "ncu bulk=$bk:"; grep -E "gpu__time|inst_executed|dram__" $O/ncu-$bk.txt
done; el; pack
timeout 60 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m > /dev/null 2>&1; echo "synth rc=$?"
for r in 1 2; do for bk in 1 0; do for pt in 16000; do
  LS_ATTENTION_TC_BULK=$bk timeout 60 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c 16384 > $O/b8-$pt-$bk-$r.txt 2>&1
  echo "8b after $pt bulk=$bk round $r: $(rate $O/b8-$pt-$bk-$r.txt)"
done; done; done; el
# Issue 20's short-context line on whatever card this is (the tensor-core kernel does not run there).
for r in 1 2; do
  timeout 60 $L bench -m $M/8b.gguf -n 128 > $O/b8-short-$r.txt 2>&1; echo "8b resident round $r: $(rate $O/b8-short-$r.txt)"
done; el
finish
