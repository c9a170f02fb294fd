#!/bin/bash
# Session 10, call 3: GEMV v7 (kernels/gemv_q4k.cu, Q4_K straight to
# registers) against v6 (LS_GEMV_VERSION=6) end to end and per shape; its
# tests; the stall table of a resident decode (where the step's time goes).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2; do
  for v in 0 6; do
    echo -n "round $r GEMV_VERSION=$v q4_k_m: "; LS_GEMV_VERSION=$v timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
  done
done
echo -n "q8_0: "; timeout 60 $L decode -m $M/8b-q8_0.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
a=$(LS_GEMV_VERSION=6 timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --ids --no-display-prompt 2>/dev/null | tail -1)
b=$(timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --ids --no-display-prompt 2>/dev/null | tail -1)
[ "$a" = "$b" ] && echo "v6 vs v7 greedy ids (64): identical" || { echo "v6 vs v7: DIFFERENT"; echo "$a"; echo "$b"; }
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats --trace $O/trace.json > /dev/null 2> $O/stats.txt; tail -25 $O/stats.txt
timeout 60 $L trace summarize $O/trace.json --from-step 8 > $O/summary.txt 2>&1; cat $O/summary.txt | head -30; rm -f $O/trace.json; el
LS_CUDA_GRAPHS=0 timeout 120 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2000 --launch-count 500 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 8 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; el
timeout 90 $B/ls_bench_matmul > $O/bench_matmul.txt 2>&1; echo "bench_matmul rc=$?"; grep -E "graph x20|gemv v7" $O/bench_matmul.txt | head -12; el
timeout 150 $B/ls_gpu_tests -d -tc="decode fused*,cuda matmul*,cuda backend*" > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "ERROR|FAILED" $O/gpu_tests.log | head; tail -3 $O/gpu_tests.log; el
tar -cJf $OUT/s10call3.txz -C $O . ; el
