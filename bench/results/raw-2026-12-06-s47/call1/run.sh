#!/bin/bash
# Session 47 call 1: issue 20's lines at HEAD on whatever card comes (its
# targets are the H200's): the resident 8b Q4_K_M and Q8_0 against bench's
# device-memory bound, two rounds each; the 8b after 16,000 tokens; the
# attention's read pattern at 16k without arithmetic (ls_bench_kv_read, new)
# beside the attention itself (ls_bench_attention 5 --shape 8b --ctx 16384);
# then the GPU tests of the fused decode kernels, the cuda/cpu comparison,
# the pipeline and the paged cache (session 46's pool_spans fold).
# Run: OUT=$OUT LIMIT=570 bash bench/results/raw-2026-12-06-s47/call1/run.sh $PWD   (timeout 600)
# (carry .gpubin/bin.txz and .gpubin/extra.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
tar -xJf "$R/.gpubin/extra.txz" -C "$B"
L=$B/layerstream
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
timeout 60 $B/ls_bench_kv_read --ctx 16384 > $O/kvread.txt 2>&1; echo "kv_read rc=$?"; cat $O/kvread.txt
timeout 60 $B/ls_bench_attention 5 --shape 8b --ctx 16384 > $O/attn16k.txt 2>&1; echo "attn rc=$?"; tail -8 $O/attn16k.txt; el; pack
for q in q4_k_m q8_0; do
  timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > /dev/null 2>&1; echo "synth 8b $q rc=$?"
  for r in 1 2; do
    timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-$r.txt 2>&1
    echo "8b $q round $r: $(rate $O/b8-$q-$r.txt)"; grep "device memory bound" $O/b8-$q-$r.txt | cut -c1-200
  done
  [ $q = q8_0 ] && rm -f $M/8b-q8_0.gguf
done; el; pack
timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
echo "8b 16k: $(rate $O/b8-16k.txt)"; grep "device memory bound" $O/b8-16k.txt | cut -c1-200; el; pack
(cd $R && timeout $((LIMIT - SECONDS - 10)) $B/ls_gpu_tests -tc="decode fused*,cuda backend*,cuda pipeline*,*paged*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests.txt | tail -3; el
finish
