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
# run choose K), ALPHA (default 0.7), EXTRA (flags added to every run),
# ROUNDS (rounds of plain and ALPHA_KS runs, default 1; more: each K's
# median ratio to its round's plain run).
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
# ROUNDS (default 1) rounds of a plain run and the ALPHA_KS runs, each
# speculative run's ratio to the plain run of its round, then each K's
# median over the rounds: plain decoding's rate alone moves 5-15 % between
# runs on this machine (sessions 38-39), so one pair is not the result.
ratio() {
  awk -v s="$(num "$1")" -v p="$(num "$2")" 'BEGIN { if (p > 0) printf "%.2f", s / p }'
}
declare -A RATIOS
for ((r = 1; r <= ${ROUNDS:-1}; r++)); do
  P="$OUT/plain.err"
  if [ "$r" -gt 1 ]; then
    P="$OUT/plain-r$r.err"
    "$L" decode "${A[@]}" > "$OUT/plain-r$r.txt" 2> "$P" || { tail -5 "$P"; exit 1; }
    echo "plain, round $r: $(rate "$P")"
  fi
  for k in ${ALPHA_KS:-3 5 7 0}; do
    n="a$ALPHA-k$k"
    [ "$r" -gt 1 ] && n="$n-r$r"
    run "$n" "$ALPHA" "$k"
    x=$(ratio "$OUT/$n.err" "$P")
    echo "  ratio to the round's plain run: ${x}x"
    RATIOS[$k]+="$x "
  done
done
if [ "${ROUNDS:-1}" -gt 1 ]; then
  for k in ${ALPHA_KS:-3 5 7 0}; do
    # shellcheck disable=SC2086  # the ratios, one word each
    echo "median ratio, K = $k (0: chosen), ${ROUNDS} rounds: $(printf '%s\n' ${RATIOS[$k]} | sort -n |
      awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')x (${RATIOS[$k]% })"
  done
fi
