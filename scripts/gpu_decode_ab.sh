#!/usr/bin/env bash
# Resident GPU decode, the way issue 20 measures it, in one device call:
# the default build against each A/B switch of the decode path, rounds
# interleaved so the machine's drift falls on all alike; the stall table's
# gpu-compute line; and llama.cpp's llama-bench on the same file when
# LLAMA_BIN is set (built outside the tree; its folder holds the shared libraries).
#
#   BIN=.gpubin OUT=/tmp/out scripts/gpu_decode_ab.sh [q4_k_m q8_0 ...]
#
# Environment: BIN (folder with layerstream; default build), OUT (logs;
# default ./gpu-out), MODELS (default /tmp/ls-models), ROUNDS (default 2),
# N (tokens, default 128), PROMPT (default Hello), SWITCHES (space-separated,
# default all below), LLAMA_BIN.
# Switches compared (docs/architecture.md): LS_ATTENTION_ROPE=0, LS_ATTENTION_SPLITS=fixed,
# LS_ATTENTION_KERNEL=3, LS_POLL_WAIT=0, LS_PDL=0, LS_ARGMAX_ONLY=0,
# LS_GEMV_VERSION=6, =5 and =2, LS_CUDA_GRAPHS=0.
set -uo pipefail
BIN=${BIN:-build}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
ROUNDS=${ROUNDS:-2}
N=${N:-128}
L="$BIN/layerstream"
[ -x "$L" ] || { echo "error: no layerstream in $BIN (set BIN)" >&2; exit 2; }
mkdir -p "$OUT" "$M"
quants=("$@")
[ ${#quants[@]} -gt 0 ] || quants=(q4_k_m q8_0)
PROMPT=${PROMPT:-Hello}
read -r -a switches <<<"${SWITCHES:-default LS_ATTENTION_ROPE=0 LS_ATTENTION_SPLITS=fixed LS_ATTENTION_KERNEL=3 LS_POLL_WAIT=0 LS_PDL=0 LS_ARGMAX_ONLY=0 LS_GEMV_VERSION=6 LS_GEMV_VERSION=5 LS_GEMV_VERSION=2 LS_CUDA_GRAPHS=0}"
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for q in "${quants[@]}"; do
  f="$M/8b-$q.gguf"
  [ -f "$f" ] || "$L" synth -q -o "$f" --preset 8b --quant "$q" || { echo "error: synth $q failed" >&2; exit 1; }
  for r in $(seq 1 "$ROUNDS"); do
    for sw in "${switches[@]}"; do
      env=(); [ "$sw" = default ] || env=("$sw")
      echo "8b $q round $r $sw: $(env "${env[@]}" "$L" decode -m "$f" -p "$PROMPT" -n "$N" --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
    done
  done | tee "$OUT/ab-$q.txt"
  "$L" decode -m "$f" -p "$PROMPT" -n "$N" --temp 0 --no-display-prompt --stats 2>&1 >/dev/null | grep -E "^gpu-compute|^sampler" | tee "$OUT/stats-$q.txt"
  if [ -x "${LLAMA_BIN:-}/llama-bench" ]; then
    LD_LIBRARY_PATH="$LLAMA_BIN:${LD_LIBRARY_PATH:-}" "$LLAMA_BIN/llama-bench" -m "$f" -ngl 99 -p 0 -n "$N" -r 3 2>&1 | grep -E "tg$N|error" | tee "$OUT/llamacpp-$q.txt"
  fi
done
