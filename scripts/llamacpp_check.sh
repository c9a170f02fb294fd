#!/usr/bin/env bash
# Does llama.cpp open the GGUF files `layerstream synth` writes? Synthesizes
# each preset at each quant and runs llama.cpp on it: llama-simple generates
# 8 greedy tokens (compared with layerstream's), llama-bench (when present)
# times a short decode. One line per file: "ok" with the speed, or FAILED
# with llama.cpp's error.
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin scripts/llamacpp_check.sh
#
# Environment:
#   LLAMA_BIN   folder with llama-simple and/or llama-bench (required)
#   LS          the layerstream binary (default: build/layerstream)
#   MODELS      where the synthetic files go (default: /tmp/ls-llamacpp)
#   PRESETS     default "tiny 1b"; LLAMACPP_70B=1 adds 70b (40 to 75 GB a
#               file, each removed after its run; f32, 280 GB, is skipped
#               when the disk lacks room)
#   QUANTS      default "f32 q8_0 q4_k_m"
#   NGL         layers llama.cpp offloads (default 99; a CPU build ignores it)
#   LS_BACKEND  layerstream's backend for the text comparison (default cpu)
#   KEEP=1      keep the files
# Exit status: the number of files llama.cpp failed on.
set -uo pipefail
: "${LLAMA_BIN:?set LLAMA_BIN to the folder holding llama-simple or llama-bench}"
LS=${LS:-build/layerstream}
MODELS=${MODELS:-/tmp/ls-llamacpp}
PRESETS=${PRESETS:-tiny 1b}
[ "${LLAMACPP_70B:-0}" = 1 ] && PRESETS="$PRESETS 70b"
QUANTS=${QUANTS:-f32 q8_0 q4_k_m}
NGL=${NGL:-99}
LS_BACKEND=${LS_BACKEND:-cpu}
PROMPT="The quick brown fox"
SIMPLE="$LLAMA_BIN/llama-simple"
BENCH="$LLAMA_BIN/llama-bench"
[ -x "$SIMPLE" ] || [ -x "$BENCH" ] || { echo "error: no llama-simple or llama-bench in $LLAMA_BIN" >&2; exit 2; }
[ -x "$LS" ] || { echo "error: layerstream binary $LS not found (set LS)" >&2; exit 2; }
mkdir -p "$MODELS"

# GB a preset's file takes at a quant, rounded up: only a guard for the disk.
need_gb() {
  case "$1-$2" in
    70b-f32) echo 290 ;; 70b-q8_0) echo 78 ;; 70b-*) echo 45 ;;
    1b-f32) echo 6 ;; *) echo 2 ;;
  esac
}

# The line of a log that says what went wrong: llama.cpp's error, abort or
# assertion, else the last line.
why() {
  grep -m1 -E "error|GGML_ASSERT|failed|exception|terminate|Aborted" "$1" || tail -n1 "$1"
}

failures=0
for p in $PRESETS; do
  for q in $QUANTS; do
    f="$MODELS/$p-$q.gguf"
    name="$p $q"
    free_gb=$(df -BG --output=avail "$MODELS" | tail -1 | tr -dc 0-9)
    if [ "$free_gb" -lt "$(need_gb "$p" "$q")" ]; then
      echo "$name: skipped (needs ~$(need_gb "$p" "$q") GB, $free_gb GB free in $MODELS)"
      continue
    fi
    if ! "$LS" synth -q -o "$f" --preset "$p" --quant "$q" 2> "$MODELS/synth.log"; then
      echo "$name: FAILED: layerstream synth: $(tail -n1 "$MODELS/synth.log")"
      failures=$((failures + 1))
      continue
    fi
    line="$name: "
    ok=1
    if [ -x "$SIMPLE" ]; then
      if "$SIMPLE" -m "$f" -n 8 -ngl "$NGL" "$PROMPT" > "$MODELS/simple.out" 2> "$MODELS/simple.err"; then
        # Its stdout: BOS, the prompt and the 8 greedy tokens as text (control
        # tokens by name); stderr: the timings.
        text=$(cat "$MODELS/simple.out")
        text=${text#"<|begin_of_text|>"}
        text=${text#"$PROMPT"}
        speed=$(grep -m1 -oE "decoded [0-9]+ tokens in [0-9.]+ s, speed: [0-9.]+ t/s" "$MODELS/simple.err")
        line+="llama-simple ok ($speed)"
        # layerstream's 8 greedy tokens against llama.cpp's (its text turned
        # back into ids): equal means both read the model alike, rope scaling
        # included. Random weights on two backends may still part ways, and
        # text need not round-trip to the same ids: reported, not failed.
        ours=$("$LS" decode -m "$f" -p "$PROMPT" -n 8 --temp 0 --ids --no-display-prompt \
                 --backend "$LS_BACKEND" 2>/dev/null | tail -n1)
        theirs=$("$LS" tokenize -m "$f" --special --no-bos "$text" 2>/dev/null)
        if [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then line+=", the same 8 tokens as layerstream"
        else line+=", tokens differ: llama.cpp [$theirs], layerstream [$ours]"; fi
      else
        line+="llama-simple FAILED: $(why "$MODELS/simple.err")"
        ok=0
      fi
    fi
    if [ -x "$BENCH" ] && [ $ok = 1 ]; then
      if "$BENCH" -m "$f" -p 0 -n 4 -ngl "$NGL" -r 1 -o csv > "$MODELS/bench.out" 2> "$MODELS/bench.err"; then
        # csv: the last field is the tokens/s column's neighbour; print t/s.
        ts=$(tail -n1 "$MODELS/bench.out" | awk -F'"?,"?' '{print $(NF-1)}')
        line+="; llama-bench ok (tg4, one run: $ts t/s)"
      else
        line+="; llama-bench FAILED: $(why "$MODELS/bench.err")"
        ok=0
      fi
    fi
    echo "$line"
    [ $ok = 1 ] || failures=$((failures + 1))
    [ "${KEEP:-0}" = 1 ] || rm -f "$f"
  done
done
echo "llamacpp_check: $failures failed"
exit "$failures"
