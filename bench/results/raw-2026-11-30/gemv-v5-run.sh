#!/usr/bin/env bash
# One device call: GPU tests, bench_matmul, 8b decode A/B (v5 default vs LS_GEMV_VERSION=2),
# tiny cuda-vs-cpu greedy ids. Logs under $OUT; a summary on stdout.
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-/tmp/out}; M=/tmp/m; mkdir -p "$O" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
# Synthesize the two 8b models in the background while the GPU tests run.
for q in q4_k_m q8_0; do ( s0=$SECONDS; timeout 110 "$B/layerstream" synth -q -t 8 -o $M/8b-$q.gguf --preset 8b --quant $q; echo "synth $q rc=$? $((SECONDS-s0))s" ) >> "$O/synth.log" 2>&1 & done
el "tests"
timeout 75 "$B/ls_gpu_tests" -tc='cuda matmul*,cuda backend*' > "$O/tests.log" 2>&1; echo "tests rc=$?"
grep -E "ERROR|FAILED|worst|pooled|test cases|assertions|logged|values|diverge|cuda vs cpu|TEST CASE" "$O/tests.log" | grep -v "^cuda matmul: [a-z0-9_]* *worst NMSE  gemv [0-9.e-]* (thr 1e-09)" | head -90
el "bench"
timeout 70 "$B/ls_bench_matmul" "$O/mm.json" > "$O/bench.txt" 2>&1; echo "bench rc=$?"
grep -E "^bound|^\| q|gemv" "$O/bench.txt"
wait; cat "$O/synth.log"
el "8b decode"
for q in q4_k_m q8_0; do
  "$B/layerstream" inspect $M/8b-$q.gguf 2>/dev/null | grep -E "total:|token_embd"
  for v in 0 6 2; do
    echo -n "8b $q LS_GEMV_VERSION=$v: "
    LS_GEMV_VERSION=$v timeout 15 "$B/layerstream" decode -m $M/8b-$q.gguf -p Hello -n 128 --temp 0 --backend cuda --no-display-prompt 2>&1 >/dev/null | tail -1
  done
done
rm -f $M/8b-*.gguf
el "tiny cuda vs cpu"
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  "$B/layerstream" synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 20 "$B/layerstream" decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 20 "$B/layerstream" decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --no-display-prompt 2>/dev/null | tail -1)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$q: identical ($(echo $a | wc -w) ids)"; else
    python3 -c 'import sys; a,b=sys.argv[2].split(),sys.argv[3].split(); i=next((k for k in range(min(len(a),len(b))) if a[k]!=b[k]),min(len(a),len(b))); print(f"{sys.argv[1]}: DIFFERENT from step {i} (cpu {len(a)} ids, cuda {len(b)})")' "$q" "$a" "$b" || echo "$q: DIFFERENT"
  fi
done 2>&1 | tee "$O/tiny.txt"
for q in q8_0 q4_0 q4_k q6_k q4_k_m; do  # the same with v2 (f32 x) on the GPU
  a=$(timeout 20 "$B/layerstream" decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --no-display-prompt 2>/dev/null | tail -1)
  b=$(LS_GEMV_VERSION=2 timeout 20 "$B/layerstream" decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --no-display-prompt 2>/dev/null | tail -1)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$q with LS_GEMV_VERSION=2: identical"; else echo "$q with LS_GEMV_VERSION=2: DIFFERENT"; fi
done 2>&1 | tee -a "$O/tiny.txt"
el "done"
