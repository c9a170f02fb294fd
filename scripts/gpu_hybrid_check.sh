#!/usr/bin/env bash
# Hybrid (CPU + PCIe) checks on the GPU machine in one call (issue 8):
#   1. GPU tests of streaming and hybrid plans (TESTS=0 skips);
#   2. probe: host memory read, the contended pair (host read while pinned
#      H2D runs), pinned H2D, device memory: the bounds of what follows;
#   3. 70b Q4_K_M on the CPU alone (--backend cpu): tok/s against the host bound;
#   4. 70b Q4_K_M hybrid decode at --vram-budget 24GiB, for each N in
#      $CPU_LAYERS (default "auto"): the plan, its predicted bound, tok/s and
#      the warm stall table of a traced run;
#   5. the same plan's prefill of $PROMPTS-token prompts (default "512 2048"),
#      a warm request each (bench --prompt-tokens; the CPU-tier layers go
#      through PCIe for a wide step).
# Expects binaries in $BIN (default .gpubin); logs under $OUT.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
L="$BIN/layerstream"
mkdir -p "$OUT" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s)
el() { echo "   [$(($(date +%s) - t0)) s]"; }
if [ "${TESTS:-1}" = 1 ]; then
  echo "== 1. GPU tests (streaming, hybrid)"
  timeout "${TESTS_TIMEOUT:-150}" "$BIN/ls_gpu_tests" -tc='cuda streaming*' > "$OUT/gpu_tests_hybrid.log" 2>&1
  grep -E "TEST CASE:|ERROR|hybrid" "$OUT/gpu_tests_hybrid.log" | head -20
  tail -3 "$OUT/gpu_tests_hybrid.log"; el
fi
echo "== 2. probe"
"$L" probe 2>&1 | tail -8; el
[ -f "$M/70b-q4km.gguf" ] || "$L" synth -q -o "$M/70b-q4km.gguf" --preset 70b --quant q4_k_m
el
if [ "${CPU_ONLY:-1}" = 1 ]; then
  echo "== 3. 70b on the CPU alone"
  "$L" bench -m "$M/70b-q4km.gguf" --backend cpu -n "${STEPS_CPU:-4}" 2>&1 | tail -2; el
fi
B="--backend cuda --vram-budget 24GiB --ram-budget 48GiB"
for n in ${CPU_LAYERS:-auto}; do
  echo "== 4. 70b hybrid decode, --cpu-layers $n"
  "$L" bench -m "$M/70b-q4km.gguf" $B --cpu-layers "$n" -n "${STEPS_HYBRID:-8}" \
    --trace "$OUT/70b-hybrid-$n.trace.json" 2>&1 \
    | grep -E "auto|tier plan|layers:|per step|predicted|bound|^\| [0-9]" | head -12
  "$L" trace summarize "$OUT/70b-hybrid-$n.trace.json" --from-step 2 2>&1 | tail -12
  rm -f "$OUT/70b-hybrid-$n.trace.json"; el
  for p in ${PROMPTS:-512 2048}; do
    echo "== 5. 70b hybrid prefill, --cpu-layers $n, $p tokens"
    "$L" bench -m "$M/70b-q4km.gguf" $B --cpu-layers "$n" --ubatch-size "$p" -n 2 \
      --prompt-tokens "$p" 2>&1 | grep -E "tier plan|activations|^\| [0-9]|prefill" | head -6; el
  done
done
