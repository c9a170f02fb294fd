#!/bin/bash
# Session 13, call 5: the committed default (4271373 less the dropped
# attention variant) as users run it, beside llama.cpp (c392e50) on the same
# files in the same call: 8b Q4_K_M and Q8_0 decode (llama-bench tg256,
# with and without flash attention); decode after 1/1k/4k/16k-token prompts
# (llama-batched-bench S_TG); a warm trace's gpu-compute busy share; the
# device-memory bound of this machine (a 2 GiB device-to-device copy in
# PyTorch, bytes read + written). (The 70b did not fit in the device time
# left.)
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b13; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk
python3 - <<'PY' 2>&1 | tee $O/bound.txt
import torch
a = torch.empty(2 << 30, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
ts = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
ts.sort(); print("bound: D2D copy %.0f GB/s (read+write, median of 20, torch)" % (2 * a.numel() / (ts[10] * 1e-3) / 1e9))
PY
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in q4_k_m q8_0; do
  for r in 1 2 3; do echo "layerstream 8b $q round $r: $(timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done
  for fa in 0 1; do LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 90 $LB/llama-bench -m $M/8b-$q.gguf -ngl 99 -p 0 -n 256 -r 3 -fa $fa 2>&1 | grep -E "tg256|error"; done
done 2>&1 | tee $O/tg.txt; el
for fa in "" "-fa"; do
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 150 $LB/llama-batched-bench -m $M/8b-q4_k_m.gguf -ngl 99 -c 16448 -b 2048 -ub 512 $fa -npp 1,1024,4096,16000 -ntg 64 -npl 1 > $O/llamacpp-batched$fa.txt 2>&1
  grep -E "^\||error|usage" $O/llamacpp-batched$fa.txt | head -8
done; el
for p in 1 1024 4096 16000; do
  echo "layerstream prompt $p: $(timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
done | tee $O/ctx.txt; el
timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 32 --temp 0 --no-display-prompt --trace $O/trace.json > /dev/null 2>&1
$L trace summarize --from-step 3 $O/trace.json | tee $O/trace-summary.txt | grep -E "over|gpu-compute"; xz -T4 $O/trace.json; el
# (the GPU tests ran in call 4 on this code less the dropped variant; the carry has no room for them beside llama.cpp)
date -u
cd $OUT && tar cJf l.txz l
