#!/bin/bash
# Session 10, call 2: issue 20's first changes. The fused kernels' tests and
# the kernel and backend tests they touch; resident 8b decode before the
# persistent GEMV (layerstream2: fused norm/rope/KV/swiglu kernels, one GEMV
# launch for q|k|v and gate|up, v3 rmsnorm, programmatic dependent launch)
# and after it (layerstream), each with LS_PDL=0 beside; the kernel table again.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream; L2=$B/layerstream2
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2; do
  for v in "L2 1" "L2 0" "L 1" "L 0"; do set -- $v; bin=${!1}
    echo -n "round $r $1 PDL=$2 q4_k_m: "; LS_PDL=$2 timeout 60 $bin decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
  done
done
echo -n "L q8_0: "; timeout 60 $L decode -m $M/8b-q8_0.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
echo -n "L2 q8_0: "; timeout 60 $L2 decode -m $M/8b-q8_0.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
echo "greedy ids, 64 tokens, old (call 1 build not here) vs new: L2 vs L"
for q in q4_k_m q8_0; do
  a=$(timeout 60 $L2 decode -m $M/8b-$q.gguf -p Hello -n 64 --temp 0 --ids --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 64 --temp 0 --ids --no-display-prompt 2>/dev/null | tail -1)
  [ "$a" = "$b" ] && echo "$q: identical" || { echo "$q: DIFFERENT"; echo "$a"; echo "$b"; }
done; el
LS_CUDA_GRAPHS=0 timeout 120 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2000 --launch-count 500 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 8 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; el
timeout 90 $B/ls_bench_matmul > $O/bench_matmul.txt 2>&1; echo "bench_matmul rc=$?"; el
timeout 200 $B/ls_gpu_tests -d -tc="decode fused*,cuda matmul*,cuda ops*,cuda backend*,cuda kv*" > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "ERROR|FAILED" $O/gpu_tests.log | head; tail -3 $O/gpu_tests.log; el
tar -cJf $OUT/s10call2.txz -C $O . ; el
