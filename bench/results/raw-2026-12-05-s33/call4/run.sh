#!/bin/bash
# Session 33, call 4: issue 18's replay check with the hidden state read by
# a kernel (the verify steps are width 8, where the copy engine's queue
# cost 65 ms a step): the tied synthetic 70b at 24 GiB, plain decoding,
# K = 7 at acceptance 1 and 0.7 (scripts/gpu_speculative_check.sh, 64
# tokens), then K = 7 at 0.7 again with LS_HIDDEN_DMA=1 (the old copy).
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s33/call4/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rm -f $M/70b.gguf
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=64 KS="7" ALPHA_KS="7" timeout 400 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
F=$M/70b-q4km-tied.gguf
LS_HIDDEN_DMA=1 timeout 120 $B/layerstream decode -m $F --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" -n 64 --temp 0 --ids --no-display-prompt --draft replay:$O/spec/plain.ids:0.7 --draft-min 7 --draft-max 7 --stats > $O/dma.txt 2> $O/dma.err
echo "a0.7-k7 LS_HIDDEN_DMA=1 rc=$?: $(grep -o 'generated [0-9]* tokens, [0-9.]* tok/s' $O/dma.err) | $(grep -o 'speculative.*' $O/dma.err | head -1)"; el
cd $O && tar -czf spec.tgz spec spec.txt dma.txt dma.err && rm -rf spec dma.txt dma.err
