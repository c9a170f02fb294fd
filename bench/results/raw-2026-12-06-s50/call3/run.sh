#!/bin/bash
# Session 50 call 3: issue 14's last llama.cpp check that fits this machine:
# the synthetic 70b at Q8_0 (75 GB: more than the 64 GiB disk, so written to
# a RAM file system) loaded and run by llama.cpp's llama-bench on the CPU;
# then issue 14's CPU attention, two rounds. (The 70b at F32, 282 GB, fits
# neither the disk nor the 128 GiB of RAM.)
# Carries: .gpubin/bin.txz (scripts/gpu_pack.sh) and .gpubin/lcpp-cpu.txz
# (llama-bench built without CUDA, AVX2, from ggerganov/llama.cpp c392e5094
# outside the project; never committed).
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-06-s50/call3/run.sh $PWD   (timeout 440)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
tar -xJf $R/.gpubin/lcpp-cpu.txz -C $B || exit 2
free -g | head -2; el
D=/mnt/big
mkdir -p $D && mount -t tmpfs -o size=100G tmpfs $D ||
  { mount -o remount,size=100G /dev/shm; D=/dev/shm; }
df -h $D | tail -1
F=$D/70b-q8_0.gguf
timeout 300 $B/layerstream synth -q -o $F --preset 70b --quant q8_0 > $O/synth.txt 2>&1
echo "synth 70b q8_0 rc=$?"; ls -la $F; el; pack
timeout 100 $B/llama-bench -m $F -p 0 -n 2 -r 1 -ngl 0 -t 16 > $O/lcpp-70b-q8_0.txt 2>&1
echo "llama-bench 70b q8_0 rc=$?"; grep -E "\| llama|error|failed" $O/lcpp-70b-q8_0.txt | head -5; el; pack
rm -f $F; [ $D = /mnt/big ] && umount $D
if left 50; then
  timeout 45 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 61 > $O/cpu-att.txt 2>&1
  grep -E "^ *[0-9]+ " $O/cpu-att.txt | head -6
fi
finish
