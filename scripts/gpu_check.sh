#!/usr/bin/env bash
# The GPU machine's checks in one command (the device time is short: one
# call does it all). Expects the binaries in $BIN (default .gpubin) and
# writes logs under $OUT (default ./gpu-out):
#   1. every GPU test (kernels against their CPU references, CUDA backend vs CPU);
#   2. decode --backend cuda vs --backend cpu: greedy ids over 64 steps on a
#      tiny synthetic model of every quant type;
#   3. the device-memory bandwidth and GEMM rate (ls_bench_matmul), then
#      resident decode of a synthetic 8b in Q4_K_M and Q8_0, and a 512-token
#      prefill, each to compare with those ceilings.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
mkdir -p "$OUT" "$M"
L="$BIN/layerstream"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

echo "== 1. GPU tests"
"$BIN/ls_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.log" | tail -4

echo "== 2. cuda vs cpu greedy ids, 64 steps"
: > "$OUT/cuda_vs_cpu.txt"
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  "$L" synth -q -o "$M/tiny-$q.gguf" --preset tiny --quant "$q" || { echo "$q synth failed" >> "$OUT/cuda_vs_cpu.txt"; continue; }
  a=$("$L" decode -m "$M/tiny-$q.gguf" -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --no-display-prompt 2>/dev/null | tail -1)
  b=$("$L" decode -m "$M/tiny-$q.gguf" -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --no-display-prompt 2>"$OUT/cuda-$q.err" | tail -1)
  n=$(echo "$a" | wc -w)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$q: identical ($n ids)"; else echo "$q: DIFFERENT"; echo " cpu:  $a"; echo " cuda: $b"; fi >> "$OUT/cuda_vs_cpu.txt"
done
cat "$OUT/cuda_vs_cpu.txt"

echo "== 3. ceilings, then 8b resident decode and prefill"
"$BIN/ls_bench_matmul" > "$OUT/bench_matmul.txt" 2>&1; grep -iE "bandwidth|TFLOP" "$OUT/bench_matmul.txt" | head -4
python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog.']*52))" > "$M/prompt512.txt"
for q in q4_k_m q8_0; do
  "$L" synth -q -o "$M/8b-$q.gguf" --preset 8b --quant "$q"
  "$L" inspect "$M/8b-$q.gguf" | grep -E "total:" | tee "$OUT/8b-$q.size"
  "$L" decode -m "$M/8b-$q.gguf" -p "Hello" -n 128 --temp 0 --backend cuda --no-display-prompt 2>&1 >/dev/null | tail -1 | tee "$OUT/8b-$q.decode"
done
"$L" decode -m "$M/8b-q4_k_m.gguf" -f "$M/prompt512.txt" -n 2 --temp 0 --backend cuda --no-display-prompt 2>&1 >/dev/null | tail -1 | tee "$OUT/8b-prefill.txt"
