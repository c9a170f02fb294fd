#!/bin/bash
O=$OUT; B=/tmp/b; mkdir -p $B; tar xzf .gpubin/bin.tgz -C $B
T0=$(date +%s); el() { echo "[$1 $(( $(date +%s) - T0 ))s]"; }
BIN=$B OUT=$O TESTS=0 CPU_ONLY=1 STEPS_CPU=16 STEPS_HYBRID=12 CPU_LAYERS="auto 27" PROMPTS="512 2048" bash .gpubin/gpu_hybrid_check.sh 2>&1 | tee $O/hybrid.txt | grep -vE "^\| (planner|reader|copier|sampler)"
el hybrid
timeout 40 $B/layerstream bench -m /tmp/ls-models/70b-q4km.gguf --backend cpu -n 16 2>&1 | tail -1 | tee $O/cpu_alone2.txt; el cpu
