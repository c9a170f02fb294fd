#!/usr/bin/env bash
# The GPU machine's checks in one command (the device time is short: one
# call does it all). Expects the binaries in $BIN (default .gpubin) and
# writes logs under $OUT (default ./gpu-out):
#   1. every GPU test (kernels against their CPU references, CUDA backend vs CPU);
#   2. decode --backend cuda vs --backend cpu: greedy ids over 64 steps on a
#      tiny synthetic model of every quant type;
#   3. the device-memory bandwidth and GEMM rate (ls_bench_matmul), then
#      resident decode of a synthetic 8b in Q4_K_M and Q8_0 (with and without
#      CUDA graphs; the stall table's gpu-compute line; llama.cpp's
#      llama-bench on the same file when LLAMA_BIN is set), and a 512-token
#      prefill (a warm request, bench --prompt-tokens), each to compare with
#      those ceilings.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
mkdir -p "$OUT" "$M"
L="$BIN/layerstream"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

echo "== 1. GPU tests"
"$BIN/ls_gpu_tests" > "$OUT/gpu_tests.log" 2>&1
grep -E "ERROR|FAILED|values:|logged:|  [a-z_]+ := " "$OUT/gpu_tests.log" | head -30
tail -4 "$OUT/gpu_tests.log"

echo "== 2. cuda vs cpu greedy ids, 64 steps"
: > "$OUT/cuda_vs_cpu.txt"
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  "$L" synth -q -o "$M/tiny-$q.gguf" --preset tiny --quant "$q" || { echo "$q synth failed" >> "$OUT/cuda_vs_cpu.txt"; continue; }
  a=$("$L" decode -m "$M/tiny-$q.gguf" -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act ${ACT:-f32} --no-display-prompt 2>/dev/null | tail -1)
  b=$("$L" decode -m "$M/tiny-$q.gguf" -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act ${ACT:-f32} --no-display-prompt 2>"$OUT/cuda-$q.err" | tail -1)
  n=$(echo "$a" | wc -w)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$q: identical ($n ids)"; else echo "$q: DIFFERENT"; echo " cpu:  $a"; echo " cuda: $b"; fi >> "$OUT/cuda_vs_cpu.txt"
done
cat "$OUT/cuda_vs_cpu.txt"

echo "== 3. ceilings, then 8b resident decode and prefill"
"$BIN/ls_bench_matmul" > "$OUT/bench_matmul.txt" 2>&1; grep -E "^bound" "$OUT/bench_matmul.txt" | head -3
for q in q4_k_m q8_0; do
  "$L" synth -q -o "$M/8b-$q.gguf" --preset 8b --quant "$q"
  "$L" inspect "$M/8b-$q.gguf" | grep -E "total:" | tee "$OUT/8b-$q.size"
  for graphs in 1 0; do
    echo -n "8b $q, CUDA graphs $graphs: "
    LS_CUDA_GRAPHS=$graphs "$L" decode -m "$M/8b-$q.gguf" -p "Hello" -n 128 --temp 0 --backend cuda --no-display-prompt 2>&1 >/dev/null | tail -1 | tee "$OUT/8b-$q-graphs$graphs.decode"
  done
  # The stall table: how busy the GPU is between steps (issue 20 asks 95 %).
  "$L" decode -m "$M/8b-$q.gguf" -p "Hello" -n 128 --temp 0 --backend cuda --no-display-prompt --stats 2>&1 >/dev/null | grep -E "^gpu-compute" | tee "$OUT/8b-$q.stats"
  # llama.cpp on the same file, when LLAMA_BIN holds a llama-bench built outside the tree.
  if [ -x "${LLAMA_BIN:-}/llama-bench" ]; then
    LD_LIBRARY_PATH="$LLAMA_BIN:$LD_LIBRARY_PATH" "$LLAMA_BIN/llama-bench" -m "$M/8b-$q.gguf" -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "tg128|error" | tee "$OUT/8b-$q-llamacpp.txt"
  fi
done
echo "8b q4_k_m prefill, 512 tokens, a warm request:"
"$L" bench -m "$M/8b-q4_k_m.gguf" --backend cuda --prompt-tokens 512 -n 2 2>&1 | tail -1 | tee "$OUT/8b-prefill.txt"
rm -f "$M"/8b-*.gguf
