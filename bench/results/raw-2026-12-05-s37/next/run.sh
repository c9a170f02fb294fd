#!/bin/bash
# For the next session's first call (written in session 37, not run yet).
# Pack first: scripts/gpu_pack.sh; carry .gpubin/bin.txz.
# Output: $OUT/out.tgz (every log). Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s37/next/run.sh $PWD
# In order, while LIMIT lasts:
#  1. the direct tile's prefetch distance on the Xeon (LS_CPU_PACK_AHEAD 4, 8,
#     16, 32; 8 tokens, 16 threads, the 70b shapes; two rounds);
#  2. the dot against the direct tile at 2, 3 and 4 tokens (LS_GEMM_MIN_TOKENS:
#     on Zen 4 the direct tile won at 3 by 12-13 %), and the dot at one token
#     with its work split and prefetch distance swept;
#  3. issue 18's replay check, plain and K = 7 at acceptance 0.7, three rounds;
#  4. issue 17's widths with the issue's shape (128-token prompts, 128 new
#     tokens), widths 32, 8, 1, 16, 64 (one process each);
#  5. issue 14's CPU attention at 1k-16k, the default against session 37's
#     spans (--split blocks,spans), and a timeline of each at 1k.
# Nothing runs beside another (session 37's call 3 ran the GEMM beside the
# synth: noise).
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
mm() {  # name, env..., args
  local n=$1; shift
  left 40 || { echo "mm $n: no time"; return; }
  env "$@" timeout 40 $B/ls_bench_cpu_matmul --threads 16 --types q4_k,q6_k --act q8 --shapes 70b \
    --weights-gib 4 --reps 7 --direct on ${MMARGS} > $O/mm-$n.txt 2>&1
  echo "mm $n rc=$?"; grep -E "^q[46]_K" $O/mm-$n.txt | awk '{printf "%s %s %s %s %s | ", $1, $2, $4, $10, $16}'; echo
}
MMARGS="--ntok 8 --path gemm"
for r in 1 2; do for a in 16 4 8 32; do mm ahead$a-$r LS_CPU_PACK_AHEAD=$a; done; done; el
MMARGS="--ntok 2,3,4 --path dot,gemm"
mm dotgemm-1 X=1; el
# The dot at one token (the CPU tier of plain decoding): on the H100
# machines the engine's calibration read 95-99 GB/s where the host probe
# read 138; the dot's work split and prefetch, swept.
MMARGS="--ntok 1 --path dot --tasks 2,4 --pf 0,1,2 --types q4_k"
mm dot1-1 X=1; el
for r in 1 2 3; do
  left 70 || break
  (cd $R && BIN=$B OUT=/tmp/spec-$r MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > $O/spec-$r.txt 2>&1)
  echo "spec $r rc=$?"; cut -c1-200 $O/spec-$r.txt | grep -E "^plain|^a0|CPU tier"; el
done
(cd /tmp && tar -czf $O/spec-err.tgz spec-*/*.err 2>/dev/null)
for w in 32 8 1 16 64; do
  left 100 || break
  timeout 95 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch $w --prompt-tokens 128 -n 128 -c 256 --stats > $O/batch-$w.txt 2>&1
  echo "batch $w rc=$?"; grep -E "^\| [0-9]" $O/batch-$w.txt | cut -d"|" -f1-5,12-20; grep -E "CPU tier by width" $O/batch-$w.txt | cut -c1-250; el
done
if left 70; then
  # Session 37's spans (AttnCpuTuning::spans) against the default, then a
  # timeline of each at 1k.
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --split blocks,spans --reps 41 > $O/attn.txt 2>&1
  echo "attention rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn.txt | awk '{print $1, $5, $7, $10 " us", $15}'; el
  left 40 && timeout 35 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --split blocks,spans --reps 201 --timeline > $O/attn-tl.txt 2>&1
  grep -E "^ +1024|timeline" $O/attn-tl.txt | cut -c1-220; el
fi
# The spans in the engine: decode after a 4,096-token prompt, default and
# LS_ATTN_SPANS=1 (the CPU tier's attention reads 16 MB a layer there).
for v in 0 1 0 1; do
  left 75 || break
  LS_ATTN_SPANS=$v timeout 70 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 4096 -n 24 -c 4352 > $O/long-spans$v-$SECONDS.txt 2>&1
  echo "long spans=$v rc=$?"; grep -E "^\| [0-9]" $O/long-spans$v-*.txt | tail -1 | cut -d"|" -f1-5; el
done
# At most 8 files come back from a call: one archive.
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
