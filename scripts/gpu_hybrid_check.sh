#!/usr/bin/env bash
# Hybrid (CPU + PCIe) checks on the GPU machine in one call (issue 8), plus a
# decode trace of the resident 8b (where issue 5's decode time goes):
#   1. GPU tests of streaming and hybrid plans;
#   2. probe (host memory read, pinned H2D, device memory);
#   3. 8b Q4_K_M resident decode with --trace: the warm stall table;
#   4. 70b Q4_K_M on the CPU alone (--backend cpu): tok/s against the host bound;
#   5. 70b Q4_K_M hybrid: --vram-budget 24GiB, --cpu-layers N for N in $CPU_LAYERS.
# Expects binaries in $BIN (default .gpubin); logs under $OUT.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
L="$BIN/layerstream"
mkdir -p "$OUT" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "== 1. GPU tests (streaming, hybrid)"
"$BIN/ls_gpu_tests" -tc='cuda streaming*' > "$OUT/gpu_tests_hybrid.log" 2>&1
grep -E "ERROR|MESSAGE|max \|hybrid|values:|  [a-z_]+ := " "$OUT/gpu_tests_hybrid.log" | head -30
tail -3 "$OUT/gpu_tests_hybrid.log"
echo "== 2. probe"
"$L" probe 2>&1 | tail -8
echo "== 3. 8b Q4_K_M resident decode, traced"
"$L" synth -q -o "$M/8b-q4km.gguf" --preset 8b --quant q4_k_m
"$L" decode -m "$M/8b-q4km.gguf" -p Hello -n 64 --temp 0 --backend cuda --no-display-prompt \
  --trace "$OUT/8b.trace.json" 2>&1 >/dev/null | tail -1
"$L" trace summarize "$OUT/8b.trace.json" --from-step 2
rm -f "$M/8b-q4km.gguf" "$OUT/8b.trace.json"
[ -f "$M/70b-q4km.gguf" ] || "$L" synth -q -o "$M/70b-q4km.gguf" --preset 70b --quant q4_k_m
if [ "${CPU_ONLY:-1}" = 1 ]; then
  echo "== 4. 70b on the CPU alone"
  "$L" bench -m "$M/70b-q4km.gguf" --backend cpu -n "${STEPS_CPU:-3}" 2>&1 | tail -2
fi
for n in ${CPU_LAYERS:-20 28}; do
  echo "== 5. 70b hybrid, --cpu-layers $n"
  "$L" bench -m "$M/70b-q4km.gguf" --backend cuda --vram-budget 24GiB --ram-budget 48GiB \
    --cpu-layers "$n" -n "${STEPS_HYBRID:-6}" --trace "$OUT/70b-hybrid-$n.trace.json" 2>&1 \
    | grep -E "tier plan|layers:|per step|^\| [0-9]" | head -6
  "$L" trace summarize "$OUT/70b-hybrid-$n.trace.json" --from-step 2 2>&1 | tail -12
  rm -f "$OUT/70b-hybrid-$n.trace.json"
done
