#!/bin/bash
# Session 33, call 3. (1) Issue 14's attention line again, with the bench's
# defect gone (every setting of call 1 after the first re-read the layers
# the one before had read, from the 300 MiB L3 at 1k-2k): --start and
# --fold-pf at 1k-16k, blocks of 128 and 256 at 1k-2k, four rounds,
# LS_POOL_PAUSE_US=50 in alternate ones; the timeline at 1k. (2) The GPU
# tests of the new hidden-state read (kernels/host_read.cuh) and of hybrid
# plans. (3) Issue 18's replay check (plain, K = 7 at acceptance 1 and
# 0.7) on the tied 70b at 24 GiB, and K = 7 at 0.7 with
# LS_HIDDEN_READ=kernel (the hidden state read by a kernel, not copied
# behind the streamed layers); bench --batch 8,32 on the same file, the
# kernel against the copy, a trace each.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s33/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
F=$M/70b.gguf
f() { grep -E "^ +[0-9]+ +16 " $1 | awk '{print $1, $5, $7, $10 " us", $15}'; }
for r in 1 2 3 4; do
  P=0; [ $((r % 2)) = 0 ] && P=50
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > $O/all-$r.txt 2>&1
  echo "contexts round $r LS_POOL_PAUSE_US=$P rc=$?"; f $O/all-$r.txt | tr '\n' ';'; echo
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --block 0,256 --start claim,static --reps 41 > $O/blk-$r.txt 2>&1
  echo "blocks round $r rc=$?"; f $O/blk-$r.txt | tr '\n' ';'; echo
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --start claim,static --reps 201 --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "k1v2n|timeline|calls where" $O/tl.txt | cut -c1-250; el
# The tied 70b serves both the batch runs and the replay check (the disk
# holds one 70b file; a tied model reads the same bytes a token).
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=64 KS="7" ALPHA_KS="7" timeout 300 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
F=$M/70b-q4km-tied.gguf
LS_HIDDEN_READ=kernel timeout 120 $B/layerstream decode -m $F --vram-budget 24GiB --ram-budget 48GiB -p "Once upon a time" -n 64 --temp 0 --ids --no-display-prompt --draft replay:$O/spec/plain.ids:0.7 --draft-min 7 --draft-max 7 --stats > $O/dma.txt 2> $O/dma.err
echo "a0.7-k7 LS_HIDDEN_READ=kernel rc=$?: $(grep -o 'generated [0-9]* tokens, [0-9.]* tok/s' $O/dma.err) | $(grep -o 'speculative.*' $O/dma.err | head -1)"; el
mkdir -p $R/.ut && cd $R/.ut
timeout 150 $B/ls_gpu_tests -tc="cuda ops: reads*,cuda streaming: hybrid*,cuda pipeline batch*" > $O/gpu.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|SKIPPED|ERROR|FAILED" $O/gpu.txt | head; el
cd /tmp
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
for d in kernel copy; do
  LS_HIDDEN_READ=$d timeout 120 $B/layerstream bench "${A[@]}" --batch 8,32 --prompt-tokens 128 -n 24 -c 256 --stats --trace $O/t8-d$d.json > $O/b-d$d.txt 2>&1
  echo "batch LS_HIDDEN_READ=$d rc=$?"; grep -E "^\| [0-9]" $O/b-d$d.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/b-d$d.txt | cut -c1-200
  xz -T8 $O/t8-d$d.json
done; el
cd $O && tar -czf out.tgz all-*.txt blk-*.txt tl.txt gpu.txt b-d*.txt spec spec.txt dma.txt dma.err && rm -rf all-*.txt blk-*.txt tl.txt gpu.txt b-d*.txt spec spec.txt dma.txt dma.err; ls -la
