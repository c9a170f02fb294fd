#!/usr/bin/env bash
# The prefill branch's GPU checks in one call (< 150 s of device time):
#   1. the new GPU tests (dequantization and f32 -> f16 bitwise against the
#      CPU reference, matmul_cuda_shared_x on every PrefillPath);
#   2. ls_bench_prefill (8b:512, 70b:512, 70b:2048; its bound, copy and H2D
#      rates measured in the same run) while a synthetic 8b Q4_K_M is made;
#   3. the end-to-end warm 512-token prefill of that 8b on each
#      LS_PREFILL_PATH (legacy = before this branch, tile, overlap);
#   4. the older backend, streaming and matmul GPU tests in the time left.
# Binaries in $BIN (default .gpubin-prefill), logs under $OUT (default ./gpu-out).
set -uo pipefail
BIN=${BIN:-.gpubin-prefill}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
BUDGET=${BUDGET:-140}  # seconds for the whole script
mkdir -p "$OUT" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - t0))); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

echo "== 1. new GPU tests"
timeout 25 "$BIN/ls_gpu_tests" -tc='cuda dequant*,cuda convert*,cuda matmul_cuda_shared_x*' > "$OUT/tests_new.log" 2>&1
echo "rc $?"
grep -E "ERROR|FAILED|  [a-z_ ]+ := |values:" "$OUT/tests_new.log" | head -20
tail -3 "$OUT/tests_new.log"

echo "== 2. ls_bench_prefill (synth of the 8b in the background, niced)"
(nice -n 19 "$BIN/layerstream" synth -q -o "$M/8b.gguf" --preset 8b --quant q4_k_m > "$OUT/synth.log" 2>&1
 echo "synth rc $? at $(($(date +%s) - t0)) s" >> "$OUT/synth.log") &
syn=$!
timeout 50 "$BIN/ls_bench_prefill" > "$OUT/bench_prefill.md" 2>&1
echo "bench rc $? at $(($(date +%s) - t0)) s"
grep -vE "^\|---" "$OUT/bench_prefill.md"
wait $syn
cat "$OUT/synth.log" | tail -2

echo "== 3. end to end: bench --prompt-tokens 512 -n 2 (a warm request), per LS_PREFILL_PATH"
for p in legacy tile overlap; do
  t=$(left); [ "$t" -gt 20 ] && t=20
  [ "$t" -lt 5 ] && { echo "$p: no time left"; continue; }
  LS_PREFILL_PATH=$p timeout "$t" "$BIN/layerstream" bench -m "$M/8b.gguf" --backend cuda --prompt-tokens 512 -n 2 > "$OUT/e2e-$p.txt" 2>&1
  echo "$p rc $?: $(grep -E '^\|' "$OUT/e2e-$p.txt" | tail -1)"
done
grep -E '^\|' "$OUT/e2e-legacy.txt" 2>/dev/null | head -1

echo "== 4. older GPU tests (backend, streaming, matmul) in the time left"
t=$(left)
if [ "$t" -gt 5 ]; then
  timeout "$t" "$BIN/ls_gpu_tests" -tc='cuda backend*,cuda streaming*,cuda matmul*' > "$OUT/tests_rest.log" 2>&1
  echo "rc $?"
  grep -E "ERROR|FAILED" "$OUT/tests_rest.log" | head -10
  tail -3 "$OUT/tests_rest.log"
fi
echo "done at $(($(date +%s) - t0)) s"
