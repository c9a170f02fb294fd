#!/bin/bash
# Session 10, call 1: issue 20's baseline. Resident 8b decode (Q4_K_M, Q8_0)
# as shipped, llama.cpp's llama-bench on the same files (built here, in the
# background, outside the tree), a per-kernel time table of one decode token
# (ncu: duration and DRAM bytes read), and the GPU tests with a long timeout.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
# A. our decode, as a user runs it (default flags), before anything else loads the CPU.
for q in q4_k_m q4_k_m q8_0; do
  echo -n "8b $q: "; timeout 60 $L decode -m $M/8b-$q.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | tail -1
done; el
timeout 60 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 1 -n 128 > $O/bench-8b.txt 2>&1; tail -3 $O/bench-8b.txt; el
# B. llama.cpp build in the background (15 cores), shared libraries.
( mkdir -p /tmp/lc && tar -xJf .llama/src.txz -C /tmp/lc && cd /tmp/lc/lcpp && \
  cmake -S . -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON > /tmp/lc/cmake.log 2>&1 && \
  cmake --build build -j 15 --target llama-bench llama-batched-bench > /tmp/lc/build.log 2>&1; echo "llama build rc=$?" > /tmp/lc/done ) &
# C. one decode token, kernel by kernel (ncu; graphs off so every kernel is its own launch).
LS_CUDA_GRAPHS=0 timeout 200 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2600 --launch-count 700 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 8 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; wc -l $O/ncu-q4km.csv; el
# D. the GPU tests (kernels against their CPU references), long timeout.
timeout 250 $B/ls_gpu_tests > $O/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; tail -3 $O/gpu_tests.log; el
while [ ! -f /tmp/lc/done ] && [ $(($(date +%s) - t0)) -lt 480 ]; do sleep 5; done
cat /tmp/lc/done; tail -3 /tmp/lc/build.log; el
LB=/tmp/lc/lcpp/build/bin
if [ -x $LB/llama-bench ]; then
  for q in q4_k_m q8_0; do timeout 60 $LB/llama-bench -m $M/8b-$q.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "tg|error"; done; el
  mkdir -p /tmp/lcpk && cp -a $LB/llama-bench $LB/llama-batched-bench /tmp/lcpk/ && find /tmp/lc/lcpp/build -name "*.so*" -exec cp -a {} /tmp/lcpk/ \;
  ls /tmp/lc/lcpp/build/bin | head; 
  tar -C /tmp -cf - lcpk | xz -T8 -6 > /tmp/lcpk.txz; ls -la /tmp/lcpk.txz
  split -b 15M /tmp/lcpk.txz $OUT/lcpk.txz.part-
fi
tar -cJf $OUT/s10call1.txz -C $O . ; ls -la $OUT; el
