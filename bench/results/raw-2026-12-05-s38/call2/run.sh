#!/bin/bash
# Session 38, call 2: (1) issue 14's CPU attention, blocks against spans, two
# rounds in alternated order, and a timeline at 1k (nothing beside it);
# (2) the GPU's matmuls at 2-8 tokens, the GEMV against the int8 GEMM forced
# (ls_bench_matmul --widths 70b, beside the synth); (3) width 8 in the engine,
# LS_MMQ_MIN_TOK=2 (the int8 GEMM at decode widths) against the default, with
# where a CPU-tier layer's time goes (LS_CPU_OP_TIMES); (4) the GPU tests
# with LS_MMQ_MIN_TOK=2; (5) issue 18's replay, K = 7 and chosen; (6) the op
# times CPU only.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s38/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name --format=csv,noheader; el
for sp in blocks,spans spans,blocks; do
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --split $sp --reps 41 > $O/attn-$sp.txt 2>&1
  echo "attention $sp rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$sp.txt | cut -c1-200; el
done
timeout 35 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --split blocks,spans --reps 201 --timeline > $O/attn-tl.txt 2>&1
grep -E "^ +1024|timeline|first|spread" $O/attn-tl.txt | cut -c1-220; el
F=$M/70b-q4km-tied.gguf
( timeout 100 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied > $O/synth.txt 2>&1; echo "synth rc=$?" >> $O/synth.txt ) &
SP=$!
timeout 120 $B/ls_bench_matmul --widths 70b > $O/widths-70b.txt 2>&1; echo "widths rc=$? (beside the synth)"; el
sed -E 's/ +/ /g' $O/widths-70b.txt | cut -c1-420
wait $SP; cat $O/synth.txt; el
for mq in 9 2; do
  left 70 || break
  LS_MMQ_MIN_TOK=$mq LS_CPU_OP_TIMES=1 timeout 70 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 8 --prompt-tokens 128 -n 32 -c 256 --stats > $O/ops-hybrid8-mmq$mq.txt 2>&1
  echo "hybrid width 8, LS_MMQ_MIN_TOK=$mq rc=$?"; grep -E "cpu op times|^\| [0-9]|CPU tier by width" $O/ops-hybrid8-mmq$mq.txt | cut -c1-300; el
done
if left 110; then  # issue 18: plain, K = 7 and K chosen (with the routing's predictions)
  (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" timeout 105 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
  echo "spec rc=$?"; cut -c1-220 $O/spec.txt | grep -E "^plain|^a0|CPU tier"; el
fi
if left 100; then
  LS_MMQ_MIN_TOK=2 timeout 95 $B/ls_gpu_tests -tc="cuda backend: decode through CUDA graphs*,cuda backend: logits and 64 greedy*,cuda pipeline batch*" > $O/gpu-tests-mmq2.txt 2>&1
  echo "gpu tests LS_MMQ_MIN_TOK=2 rc=$?"; tail -4 $O/gpu-tests-mmq2.txt; el
fi
left 80 && LS_CPU_OP_TIMES=1 timeout 75 $B/layerstream bench -m $F --backend cpu --batch 8 --prompt-tokens 8 -n 4 -c 64 > $O/ops-cpu8.txt 2>&1
echo "ops cpu rc=$?"; grep -E "cpu op times|^\| [0-9]" $O/ops-cpu8.txt | cut -c1-300; el
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
