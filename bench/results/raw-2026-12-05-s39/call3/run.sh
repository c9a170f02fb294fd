#!/bin/bash
# Session 39, call 3: the streamed int8 GEMM (kernels/mmq_stream.cu).
#  1. its GPU test beside the register kernel (every type, odd shapes);
#  2. ls_bench_matmul --widths 70b with it (the default) and without
#     (LS_MMQ_STREAM=0): us and the ratio to the D2D bound, 2-64 tokens;
#  3. if the test passed, the engine on the 70b Q4_K_M tied at 24 GiB:
#     issue 18's replay (plain and K = 7 at 0.7) with the int8 GEMM from
#     width 2 (LS_MMQ_MIN_TOK=2) and without; width 32 (issue 17) with the
#     streamed kernel and without.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s39/call3/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 200 $B/ls_gpu_tests -tc="cuda matmul*" > $O/test-mmq.txt 2>&1); T=$?
echo "mmq test rc=$T"; tail -4 $O/test-mmq.txt; el
wait $SYN; echo "synth rc=$?"; el
timeout 120 $B/ls_bench_matmul --widths 70b > $O/widths-stream.txt 2>&1; echo "widths rc=$?"; el
LS_MMQ_STREAM=0 timeout 120 $B/ls_bench_matmul --widths 70b > $O/widths-reg.txt 2>&1; echo "widths (register) rc=$?"; el
for f in stream reg; do echo "== $f"; grep "widths Q" $O/widths-$f.txt | sed -E 's/ GB\/s//g' | cut -c1-420; done
[ $T = 0 ] || { (cd $OUT && tar -czf out.tgz r); exit 1; }
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats)
for mt in 2 9; do
  left 100 || break
  (cd $R && LS_MMQ_MIN_TOK=$mt BIN=$B OUT=/tmp/spec$mt MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout 95 bash scripts/gpu_speculative_check.sh > $O/spec-mmq$mt.txt 2>&1)
  echo "spec, LS_MMQ_MIN_TOK=$mt rc=$?"; cut -c1-200 $O/spec-mmq$mt.txt | grep -E "^plain|^a0|CPU tier"; el
done
for st in 1 0; do
  left 60 || break
  LS_MMQ_STREAM=$st timeout 60 $B/layerstream bench "${A[@]}" --batch 32 -n 64 > $O/b32-stream$st.txt 2>&1
  echo "width 32, LS_MMQ_STREAM=$st rc=$?"; grep -E "^\| [0-9]" $O/b32-stream$st.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width" $O/b32-stream$st.txt | cut -c1-250; el
done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
