#!/bin/bash
# Session 10, call 4: the grouped-query decode attention
# (kernels/attention_decode.cu) and the two-pass greedy argmax: tests, then
# resident 8b decode against LS_ATTENTION_V3=1 (the old attention) at a
# short context and after a 16,000-token prompt, and the stall table.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -d -tc="cuda ops*,cuda kv*,decode fused*,cuda backend*" > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "ERROR|FAILED|attention.*nmse" $O/gpu_tests.log | head -20; tail -3 $O/gpu_tests.log; el
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2; do
  for v in 0 1; do
    echo -n "round $r ATTENTION_V3=$v q4_k_m: "; LS_ATTENTION_V3=$v timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
  done
done
echo -n "q8_0: "; timeout 60 $L decode -m $M/8b-q8_0.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
for v in 0 1; do
  a=$(LS_ATTENTION_V3=$v timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --ids --no-display-prompt 2>/dev/null | tail -1); echo "ids v3=$v: $a" | cut -c1-120
done
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats > /dev/null 2> $O/stats.txt; grep -E "gpu-compute|^compute|sampler|generated" $O/stats.txt; el
for v in 0 1; do
  echo "16k context, ATTENTION_V3=$v:"; LS_ATTENTION_V3=$v timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 32 -c 16384 > $O/bench16k-$v.txt 2>&1; grep -E "^\||prefill|decode" $O/bench16k-$v.txt | head -4; el
done
LS_CUDA_GRAPHS=0 timeout 100 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2000 --launch-count 500 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 8 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; el
tar -cJf $OUT/s10call4.txz -C $O . ; el
