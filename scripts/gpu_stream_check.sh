#!/usr/bin/env bash
# GPU streaming checks on the GPU machine in one call (issue 6): the
# streamed-vs-resident GPU tests, the machine's ceilings (probe), then a
# synthetic 70b Q4_K_M with a 24 GiB device budget — RAM tier (48 GiB) and
# storage only (--ram-budget 0) — each with its bound measured in the same
# run, a trace of the RAM run and its warm stall table.
# Expects binaries in $BIN (default .gpubin); logs under $OUT (default ./gpu-out).
# STEPS_RAM / STEPS_STORAGE: decode steps per run; SWEEP=1 adds bench --sweep.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
L="$BIN/layerstream"
mkdir -p "$OUT" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

if [ "${TESTS:-1}" = 1 ]; then
  echo "== GPU tests"
  "$BIN/ls_gpu_tests" ${TEST_FILTER:+-tc="$TEST_FILTER"} > "$OUT/gpu_tests.log" 2>&1
  grep -E "ERROR|FAILED|CHECK|REQUIRE|with expansion|values:|logged:|CAPTURE|  [a-z_]+ := " "$OUT/gpu_tests.log" | head -40
  tail -4 "$OUT/gpu_tests.log"
fi
echo "== probe"
"$L" probe --json "$OUT/probe.json" 2>&1 | tee "$OUT/probe.txt" | tail -4
if [ "${PREFILL:-0}" = 1 ]; then
  echo "== 8b Q4_K_M prefill, 512 tokens (warm request), and the GEMM rate in the same run"
  "$BIN/ls_bench_matmul" > "$OUT/bench_matmul.txt" 2>&1; grep -E "^bound" "$OUT/bench_matmul.txt"
  "$L" synth -q -o "$M/8b-q4km.gguf" --preset 8b --quant q4_k_m
  "$L" bench -m "$M/8b-q4km.gguf" --backend cuda --prompt-tokens 512 -n 2 2>&1 | tail -1
  "$L" bench -m "$M/8b-q4km.gguf" --backend cuda -n 64 2>&1 | tail -1
  rm -f "$M/8b-q4km.gguf"
fi
echo "== synth 70b q4_k_m"
[ -f "$M/70b-q4km.gguf" ] || { /usr/bin/time -f "synth %e s, %M KiB" "$L" synth -q -o "$M/70b-q4km.gguf" --preset 70b --quant q4_k_m 2>&1 | tail -1; }
COMMON=(-m "$M/70b-q4km.gguf" --backend cuda --vram-budget 24GiB)
echo "== 70b, RAM tier 48 GiB"
"$L" bench "${COMMON[@]}" --ram-budget 48GiB -n "${STEPS_RAM:-10}" --trace "$OUT/70b-ram.trace.json" \
  --stats --json "$OUT/70b-ram.json" 2>&1 | tee "$OUT/70b-ram.txt" | grep -v "^layerstream: reading" | tail -40
echo "== warm stall table (from step 2)"
"$L" trace summarize "$OUT/70b-ram.trace.json" --from-step 2 2>&1 | tee "$OUT/70b-ram.warm.txt"
if [ "${STORAGE:-1}" = 1 ]; then
  echo "== 70b, storage only"
  "$L" bench "${COMMON[@]}" --ram-budget 0 -n "${STEPS_STORAGE:-3}" --stats --trace "$OUT/70b-storage.trace.json" \
    --json "$OUT/70b-storage.json" 2>&1 | tee "$OUT/70b-storage.txt" | tail -24
  "$L" trace summarize "$OUT/70b-storage.trace.json" --from-step 1 2>&1 | tee "$OUT/70b-storage.warm.txt"
fi
if [ "${SWEEP:-0}" = 1 ]; then
  echo "== sweep (RAM tier)"
  "$L" bench "${COMMON[@]}" --ram-budget 48GiB -n 6 --sweep depth=2,4 --sweep slots=2,3,4 \
    --json "$OUT/70b-sweep.json" 2>&1 | tee "$OUT/70b-sweep.txt" | tail -14
fi
gzip -f "$OUT"/*.trace.json 2>/dev/null
ls -la "$OUT"
