#!/bin/bash
# Session 41, call 2 (the device time left after refused starts: no 70b, so
# no replay): the fused lane form on the Xeon.
#  1. the CPU GEMM's bits on the tile unit (AMX hardware against its
#     emulation, the dot and the portable form: memcmp);
#  2. the CPU GEMM at 8 (direct tile and AMX) and 32 tokens (AMX), 16 threads, the
#     70b's shapes from DRAM: base (65481aa, before the fused form) against
#     fma, alternated, two rounds;
#  3. the GPU tests of session 40's split group and graphs, then the
#     pipeline's batch test, as long as the call lasts.
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-05-s41/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; BB=/tmp/base; LIMIT=${LIMIT:-200}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
pack() { (cd $OUT && tar -czf out.tgz r); }
mkdir -p $B $BB $O
tar -xJf $R/.gpubin/bin.txz -C $B ./ls_unit_tests ./ls_bench_cpu_matmul ./ls_gpu_tests || exit 2
tar -xJf $R/.gpubin/base.txz -C $BB || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)|amx" | cut -c1-120; el
(cd $R && timeout 40 $B/ls_unit_tests -tc="*gemm*,*amx*,*q8*,*dot*" > $O/unit-cpu.txt 2>&1)
echo "cpu unit rc=$?"; grep -E "SKIPPED|test cases|assertions|Status|FAILED|ERROR" $O/unit-cpu.txt | sort | uniq -c | tail -8; el; pack
for r in 1 2; do for v in base fma; do
  X=$B; [ $v = base ] && X=$BB
  timeout 30 $X/ls_bench_cpu_matmul --threads 16 --ntok 8 --direct on --amx off,on --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 5 --weights-gib 2 --host-bytes-gib 1 > $O/mm-$v-$r.txt 2>&1
  timeout 20 $X/ls_bench_cpu_matmul --threads 16 --ntok 32 --amx on --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 3 --weights-gib 2 --host-bytes-gib 1 >> $O/mm-$v-$r.txt 2>&1
  echo "cpu gemm $v round $r rc=$?"; grep -E "^q[46]_K" $O/mm-$v-$r.txt | awk '{print $1, $3, $4, $6, $(NF-6)}' | tr '\n' ';'; echo
done; done; el; pack
(cd $R && timeout 45 $B/ls_gpu_tests -tc="cuda matmul: decode widths*,cuda backend: decode through CUDA graphs*" -d > $O/tests.txt 2>&1)
echo "gpu tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests.txt | tail -6; el; pack
(cd $R && timeout $((LIMIT - SECONDS - 8)) $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
