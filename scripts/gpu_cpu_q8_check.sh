#!/bin/bash
# CPU tier with 8-bit activations on the GPU machine in one call (issue 8): the
# matmul bench (q8 vs f32, threads 1..16, memory kinds, row chunks, prefetch),
# then 8b and 70b Q4_K_M decoded on the CPU alone. Binaries and this script in
# one folder (.gpubin-cpu, carried); logs under $OUT. Takes about 50 s.
# Run as: bash .gpubin-cpu/gpu_cpu_q8_check.sh
B=$(cd "$(dirname "$0")" && pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); L="$O/log.txt"
el() { echo "$1 $(( $(date +%s) - T0 ))s" >> "$L"; }
{ date -u; lscpu | grep -E "Model name|L3|NUMA node\(s\)"; cat /sys/kernel/mm/transparent_hugepage/enabled; df -h /dev/shm | tail -1; } > "$L" 2>&1
timeout 20 "$B/ls_bench_cpu_matmul" --types q4_k,q6_k --threads 1,4,8,15,16 --ntok 1 --act q8,f32 --reps 3 --json "$O/a.json" > "$O/a.txt" 2>&1; el a
timeout 16 "$B/ls_bench_cpu_matmul" --types q4_k --threads 16 --ntok 1 --act q8 --mem anon,huge,file --file-dir /dev/shm --tasks 4,16 --pf 0,1,2 --reps 3 > "$O/b.txt" 2>&1; el b
mkdir -p /dev/shm/m
timeout 15 "$B/layerstream" synth -q -o /dev/shm/m/8b.gguf --preset 8b --quant q4_k_m >> "$L" 2>&1; el synth8b
timeout 10 "$B/layerstream" probe --host-threads 15,16 --host-bytes 4GiB > "$O/probe.txt" 2>&1; el probe
{ for a in q8 f32; do for t in 16 15; do echo "== 8b cpu-act $a threads $t"; timeout 8 "$B/layerstream" bench -m /dev/shm/m/8b.gguf --backend cpu -t $t -n 8 --cpu-act $a 2>&1 | tail -1; done; done; } > "$O/e8b.txt" 2>&1; el e8b
ls -l /dev/shm/m >> "$L"; "$B/layerstream" inspect /dev/shm/m/8b.gguf 2>&1 | grep -E "format:| token_embd.weight| output.weight" >> "$L"
rm -f /dev/shm/m/8b.gguf
timeout 40 "$B/layerstream" synth -q -o /dev/shm/m/70b.gguf --preset 70b --quant q4_k_m >> "$L" 2>&1; el synth70b
ls -l /dev/shm/m >> "$L"; "$B/layerstream" inspect /dev/shm/m/70b.gguf 2>&1 | grep -E "format:| token_embd.weight| output.weight" >> "$L"
timeout $(( 112 - ($(date +%s) - T0) )) "$B/layerstream" bench -m /dev/shm/m/70b.gguf --backend cpu -t 16 -n 4 > "$O/e70b.txt" 2>&1; el e70b
