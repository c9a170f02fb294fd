#!/usr/bin/env bash
# Issue 18's line on the GPU machine: the verify step's cost by width and the
# replay draft at a known acceptance, on a synthetic 70b Q4_K_M at
# --vram-budget 24GiB --ram-budget 48GiB, beside plain decoding in the same
# call.
#
#   BIN=/tmp/b OUT=/tmp/out scripts/gpu_speculative_check.sh
#
# The model is written with `synth --tied` (TIED=0: without): a random model
# with a head of its own has nearly flat logits, a verify step's width
# changes the arithmetic and so near ties, and the plain run's ids stop
# predicting the target (session 21: the acceptance was no longer ALPHA).
# Tied, its greedy output repeats its last token by a wide margin, and a
# token reads the same bytes (the head is the same Q6_K matrix).
# Prints, per run: tok/s, the speculative summary (verify steps, accepted,
# tokens a target pass), whether the ids equal plain decoding's, and the
# stall table's bound and the width routing's summary (--stats).
# Environment: BIN (folder with layerstream), OUT (logs), MODELS (default
# /tmp/ls-models), N (tokens, default 128: a run's first verify steps at
# each width are cold and still learning the split, which 64 tokens at K = 7,
# about 20 verify steps, weighed too much), KS (widths - 1 at acceptance 1,
# default "1 3 7 15"), ALPHA_KS (K at ALPHA, default "3 5 7 0": 0 lets the
# run choose K), ALPHA (default 0.7), EXTRA (flags added to every run).
set -uo pipefail
BIN=${BIN:-build}
OUT=${OUT:-./gpu-out}
M=${MODELS:-/tmp/ls-models}
N=${N:-128}
ALPHA=${ALPHA:-0.7}
L="$BIN/layerstream"
[ -x "$L" ] || { echo "error: no layerstream in $BIN (set BIN)" >&2; exit 2; }
mkdir -p "$OUT" "$M"
if [ "${TIED:-1}" = 1 ]; then F="$M/70b-q4km-tied.gguf"; T=--tied; else F="$M/70b-q4km.gguf"; T=--untied; fi
[ -f "$F" ] || "$L" synth -q -o "$F" --preset 70b --quant q4_k_m "$T" || exit 1
A=(-m "$F" --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" -n "$N" --temp 0 --ids
   --no-display-prompt)
# EXTRA: more flags for every run (e.g. "--device-slots 4"), split on spaces.
read -r -a X <<< "${EXTRA:-}"
A+=("${X[@]}")
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" "$1" | grep -o "[0-9.]* tok/s"; }
"$L" decode "${A[@]}" > "$OUT/plain.txt" 2> "$OUT/plain.err" || { tail -5 "$OUT/plain.err"; exit 1; }
tail -1 "$OUT/plain.txt" > "$OUT/plain.ids"
echo "plain: $(rate "$OUT/plain.err")"
run() {  # name, alpha, K (0: chosen by the run)
  local k=()
  [ "$3" != 0 ] && k=(--draft-min "$3" --draft-max "$3")
  "$L" decode "${A[@]}" --draft "replay:$OUT/plain.ids:$2" "${k[@]}" --stats > "$OUT/$1.txt" \
    2> "$OUT/$1.err"
  local same=differ
  cmp -s "$OUT/plain.ids" <(tail -1 "$OUT/$1.txt") && same="ids = plain"
  echo "$1: $(rate "$OUT/$1.err") | $(grep -o "speculative.*" "$OUT/$1.err" | head -1) | $same"
  grep -o "left the replay file.*" "$OUT/$1.err" | head -1
  # What the width routing settled on (CPU layers and per-layer times by width).
  grep -E "CPU tier by width|^bound:" "$OUT/$1.err" | cut -c1-200
}
num() { rate "$1" | grep -o "^[0-9.]*"; }
for k in ${KS:-1 3 7 15}; do
  run "a1-k$k" 1 "$k"
  # At acceptance 1 every step emits K + 1 tokens: a step of width K + 1
  # costs (K + 1) * plain / speculative plain steps.
  awk -v k="$k" -v p="$(num "$OUT/plain.err")" -v s="$(num "$OUT/a1-k$k.err")" \
    'BEGIN { if (s > 0) printf "  a verify step of width %d: %.2f plain steps\n", k + 1, (k + 1) * p / s }'
done
for k in ${ALPHA_KS:-3 5 7 0}; do run "a$ALPHA-k$k" "$ALPHA" "$k"; done
