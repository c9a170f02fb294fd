#!/usr/bin/env bash
# Issue 14's acceptance on the GPU machine: the hybrid plan as users run it.
# Synthetic 70b Q4_K_M at --vram-budget 24GiB --ram-budget 48GiB, default
# flags otherwise, beside llama.cpp at -ngl 46 on the same file in the same
# call. PARTS picks what runs (default: all, in this order):
#   probe    host read, contended pair, pinned H2D, device memory (the bounds)
#   llama    llama-batched-bench -ngl 46 -npp 1,256,1024,4096 -ntg 16 -npl 1
#   prompts  bench (default flags) after prompts of $PROMPTS tokens
#   sweep    fixed --cpu-layers against auto (the default) in one sweep,
#            after $SWEEP_PROMPTS tokens (default 1 and 4096),
#            $SWEEP
#   text     decode -f $TEXT (a real text, ~1k tokens), $GEN tokens
#   chat     decode --chat, the turns of $CHAT (one user message a line)
#   cpu1b    CPU alone, 1b Q4_K_M: decode after 1 and 512 prompt tokens
#   attn     CPU attention alone (ls_bench_cpu_attention), contexts 1k-16k
#   llcheck  llama.cpp opens and runs synth's tiny and 1b presets (f32, q8_0,
#            q4_k_m; scripts/llamacpp_check.sh); the 70b Q4_K_M is the file above
# Expects our binaries in $BIN and llama.cpp's in $LLAMA; logs go to $OUT.
set -uo pipefail
BIN=${BIN:-.gpubin}
OUT=${OUT:-./gpu-out}
LLAMA=${LLAMA:-}
M=${MODELS:-/tmp/ls-models}
L="$BIN/layerstream"
PARTS=${PARTS:-probe llama prompts sweep text chat}
PROMPTS=${PROMPTS:-1 256 1024 4096}
SWEEP=${SWEEP:-auto,24,26,28,30}
STEPS=${STEPS:-32}
GEN=${GEN:-32}
TEXT=${TEXT:-scripts/data/prompt-1k.txt}
CHAT=${CHAT:-scripts/data/chat-5-turns.txt}
mkdir -p "$OUT" "$M"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s)
el() { echo "   [$(($(date +%s) - t0)) s]"; }
has() { [[ " $PARTS " == *" $1 "* ]]; }
F="$M/70b-q4km.gguf"
# A context of 4608 for every run (a 4096-token prompt and its decode fit).
B="--vram-budget 24GiB --ram-budget 48GiB -c 4608"
[ -f "$F" ] || "$L" synth -q -o "$F" --preset 70b --quant q4_k_m
el
if has probe; then
  echo "== probe"
  "$L" probe 2>&1 | tail -8; el
fi
if has llama; then
  echo "== llama.cpp: llama-batched-bench -ngl 46 (46 of 80 layers: what fits 24 GiB)"
  "$LLAMA/llama-batched-bench" -m "$F" -ngl 46 -c 4608 -npp 1,256,1024,4096 \
    -ntg 16 -npl 1 2>&1 | grep -E "^\|" ; el
fi
if has prompts; then
  for p in $PROMPTS; do
    echo "== layerstream bench, default flags, after a $p-token prompt"
    "$L" bench -m "$F" $B -n "$STEPS" --prompt-tokens "$p" --stats 2>&1 \
      | grep -E "CPU tier|tier plan|^\| [0-9a-z]|re-planning|after step|error" ; el
  done
fi
if has sweep; then
  for p in ${SWEEP_PROMPTS:-1 4096}; do
    echo "== sweep of fixed --cpu-layers $SWEEP after a $p-token prompt"
    "$L" bench -m "$F" $B -n "$STEPS" --prompt-tokens "$p" --sweep cpu="$SWEEP" --stats 2>&1 \
      | grep -E "^\| [0-9a-z]|CPU tier: auto|re-planning|after step|error" ; el
  done
fi
if has text; then
  echo "== decode -f $TEXT (default flags), $GEN tokens"
  "$L" decode -m "$F" $B -f "$TEXT" -n "$GEN" --no-display-prompt --stats 2>&1 >/dev/null \
    | grep -E "CPU tier|layerstream: prompt|re-planning|after step|bound|error" ; el
fi
if has chat; then
  echo "== decode --chat, the turns of $CHAT"
  "$L" decode -m "$F" $B --chat -n "${CHAT_N:-100}" --stats < "$CHAT" 2>&1 >/dev/null \
    | grep -E "CPU tier|turn|re-planning|after step|error" ; el
fi
if has attn; then
  echo "== CPU attention alone, 70b-shaped layer, f16 cache"
  "$BIN/ls_bench_cpu_attention" 2>&1 | tail -9; el
fi
if has llcheck; then
  echo "== llama.cpp opens synth's files"
  LLAMA_BIN="$LLAMA" LS="$L" PRESETS="tiny 1b" MODELS=/tmp/ls-llamacpp scripts/llamacpp_check.sh 2>&1 \
    | tail -8; el
fi
if has cpu1b; then
  F1="$M/1b-q4km.gguf"
  [ -f "$F1" ] || "$L" synth -q -o "$F1" --preset 1b --quant q4_k_m
  for p in 1 512; do
    echo "== 1b on the CPU alone, after a $p-token prompt"
    "$L" bench -m "$F1" --backend cpu -n 32 --prompt-tokens "$p" 2>&1 | grep -E "^\| [0-9]|error"
  done; el
fi
