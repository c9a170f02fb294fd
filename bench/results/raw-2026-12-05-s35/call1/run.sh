#!/bin/bash
# Session 35, call 1 (binary with the step inputs read by a kernel, the
# default since this session): session 34's call 1 without the replay runs with the
# direct tile off (call 2 has that A/B at widths 8 and 32; the device time
# is short). Session 34's notes: the
# direct tile (kernels/cpu/gemm_q8_direct_avx512.cpp, the default since
# session 34, measured on Zen 4 only) against the packed pairs tile on the
# Xeon, and the kernel-read hidden state (LS_HIDDEN_READ=kernel, session 33,
# never run on a GPU):
#  (1) bits: the GEMM tests on the Xeon (AVX-512 VNNI and AMX), and the GPU
#      tests of the hidden-state read and of hybrid plans;
#  (2) ls_bench_cpu_matmul, 16 threads, 70b shapes, 4 and 8 tokens, q4_K
#      and q6_K: dot, packed GEMM, direct GEMM;
#  (3) issue 18's replay check (plain, K = 7 at acceptance 1 and 0.7, K
#      chosen at 0.7) on the tied 70b at 24 GiB, with LS_HIDDEN_READ=kernel,
#      the direct tile on, then off: the same binary, the same file;
# Call 2 runs bench --batch 8,32 on the same file with the direct tile and
# the searched placement of a wide step's CPU layers on and off.
# Run: OUT=$OUT timeout 580 bash bench/results/raw-2026-12-05-s35/call1/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $R/.ut && cd $R/.ut
timeout 90 $B/ls_unit_tests -tc="cpu_gemm_q8*,cpu_matmul_q8*" > $O/unit.txt 2>&1
echo "cpu gemm tests rc=$?"; grep -E "test cases|assertions|SKIPPED|ERROR|FAILED" $O/unit.txt | head
timeout 120 $B/ls_gpu_tests -tc="cuda ops: reads*,cuda ops: a step*,cuda streaming: hybrid*,cuda pipeline batch*" > $O/gpu.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|SKIPPED|ERROR|FAILED" $O/gpu.txt | head; el
cd /tmp
timeout 90 $B/ls_bench_cpu_matmul --threads 16 --ntok 4,8 --types q4_k,q6_k --act q8 --path dot,gemm --amx off --direct off,on --shapes 70b --reps 5 > $O/mm.txt 2>&1
echo "matmul rc=$?"; grep -E "^(core|q[46]_K)" $O/mm.txt | awk '{print $1, $2, $4, $6, $8, $(NF-6), $NF}'; el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
export LS_HIDDEN_READ=kernel
# Direct tile on: plain, K = 7 at acceptance 1 and 0.7, K chosen at 0.7;
# off: plain and K = 7 at 0.7 (KS=" ": no run at acceptance 1).
for set in '1|7|7 0|200'; do
  IFS='|' read d ks aks t <<< "$set"
  cd $R && LS_GEMM_DIRECT=$d BIN=$B OUT=$O/spec-d$d MODELS=$M N=64 KS="$ks" ALPHA_KS="$aks" timeout $t bash scripts/gpu_speculative_check.sh > $O/spec-d$d.txt 2>&1
  echo "spec LS_GEMM_DIRECT=$d rc=$?"; cut -c1-240 $O/spec-d$d.txt; el
done
cd $O && tar -czf out.tgz unit.txt gpu.txt mm.txt spec-d* && rm -rf unit.txt gpu.txt mm.txt spec-d*; ls -la
