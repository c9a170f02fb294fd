#!/bin/bash
# Session 10, call 5: the grouped decode attention with the warps splitting
# the positions of the value pass; tests, short and 16k-context decode
# against LS_ATTENTION_V3=1, and a trace of a resident decode (the step gap).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -d -tc="cuda ops*,cuda kv*,decode fused*,cuda backend*,cuda matmul*" > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "ERROR|FAILED|attention.*nmse" $O/gpu_tests.log | head -20; tail -3 $O/gpu_tests.log; el
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2; do
  for v in 0 1; do
    echo -n "round $r ATTENTION_V3=$v q4_k_m: "; LS_ATTENTION_V3=$v timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
  done
done
for v in 0 1; do
  echo "16k context, ATTENTION_V3=$v:"; LS_ATTENTION_V3=$v timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 32 -c 16384 > $O/bench16k-$v.txt 2>&1; grep -E "^\| [0-9]" $O/bench16k-$v.txt | head -2; el
done
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats --trace $O/trace.json > /dev/null 2> $O/stats.txt; grep -E "gpu-compute|^compute|sampler|generated" $O/stats.txt
xz -T4 $O/trace.json; ls -la $O; el
tar -cJf $OUT/s10call5.txz -C $O . ; el
