#!/bin/bash
O=$OUT; B=/tmp/b; mkdir -p $B; tar xzf .gpubin/bin.tgz -C $B
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
timeout 290 $B/ls_gpu_tests > $O/gpu_tests.log 2>&1; echo "gpu tests rc $?"; tail -3 $O/gpu_tests.log; grep -E "ERROR|FAILED" $O/gpu_tests.log | head; el tests
gzip -k $O/gpu_tests.log
BIN=$B OUT=$O TESTS=0 CPU_ONLY=1 STEPS_CPU=16 CPU_LAYERS="auto 27 28" PROMPTS="512 2048" bash .gpubin/gpu_hybrid_check.sh 2>&1 | tee $O/hybrid.txt | grep -vE "^\| (planner|reader|copier|sampler)"
el hybrid
for r in 1 2; do timeout 60 $B/layerstream bench -m /tmp/ls-models/70b-q4km.gguf --backend cpu -n 16 2>&1 | tail -1; done | tee $O/cpu_alone.txt; el cpu
rm -f $O/gpu_tests.log
