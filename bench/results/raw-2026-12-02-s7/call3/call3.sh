#!/bin/bash
# Session 7, call 3: the CPU GEMM branch on real AVX-512 (helper's check:
# unit tests, width-1 dot vs base, prefill 1b, dot vs GEMM at 70b shapes);
# the new CUDA batch test; the 70b hybrid at 24 GiB, widths 1-64, with the
# GEMM and the CPU tier's split by width (binary from cpu-gemm d2b773e).
set -u
O=$OUT; M=/tmp/m3
mkdir -p /tmp/g $M /tmp/gt
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nproc; nvidia-smi -L
tar -xJf .gpubin/gemm-bin.tar.xz -C /tmp/g && xz -dc .gpubin/s7gt3.xz > /tmp/gt/ls_gpu_tests && chmod +x /tmp/gt/ls_gpu_tests || exit 2
echo "== cpu-gemm check"
OUT=/tmp/gemmout LS_CHECK_BUDGET_S=200 timeout 260 bash .gpubin/gpu_cpu_gemm_check.sh /tmp/g/build > $O/gemm-check.txt 2>&1
echo "gemm check rc=$?"; tail -n 40 $O/gemm-check.txt
tar -cJf $O/gemm-out.tar.xz -C /tmp gemmout 2>/dev/null; el
echo "== gpu batch test"
(cd /tmp/gt && timeout 120 ./ls_gpu_tests -tc="cuda pipeline batch*") > $O/gpu-batch-test.txt 2>&1
echo "gpu batch test rc=$?"; grep -E "MESSAGE|ERROR|test cases|assertions" $O/gpu-batch-test.txt | tail -n 30; el
echo "== 70b Q4_K_M hybrid 24 GiB, widths 1-64, GEMM + split by width"
L=/tmp/g/build/layerstream
timeout 100 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 230 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 16 -n 8 -c 256 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||tier plan|CPU tier|bound|error" $O/bench-70b-batch.txt; el
