#!/bin/bash
# Session 58, call 1 (any machine): issue 14's 1k line.
# (1) The half-precision CPU attention (kernels/cpu/attention_cpu_avx512fp16.cpp,
#     not committed yet): its unit tests on this CPU (AVX512-FP16: the dev
#     machine has none), then `ls_bench_cpu_attention --f16 off,on` (f32
#     and f16 arithmetic alternated in each run), four rounds at 1k-16k,
#     --read beside it, a --timeline at 1k each way.
# (2) Session 57's thread-pool patch against main's pool (raw-2026-12-07-s57/
#     next/run.sh's first part), four rounds.
# (3) The GPU tests that hold the CPU backend and hybrid plans to the GPU's
#     tokens, with LS_ATTN_F16=1 (the CPU's attention in f16; bin.txz, 4e7e746).
# (4) On an H200 with time left: session 57's call 4 (issue 20's lines).
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-07-s58/call1/run.sh $PWD (timeout 590;
# carry .gpubin/fp16.txz, .gpubin/old-attn.txz, .gpubin/pool-attn.txz, .gpubin/bin.txz,
# .gpubin/llama-bench.txz; model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-560}
B=/tmp/b; A=$OUT/attn; mkdir -p $B $A
for f in fp16 old-attn pool-attn; do tar -xJf "$R/.gpubin/$f.txz" -C $B || exit 2; done
nvidia-smi --query-gpu=name --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)|Thread\(s\)|Core\(s\)"
grep -o -w -E "avx512_fp16|amx_bf16|avx512_bf16" /proc/cpuinfo | sort | uniq -c
timeout 150 $B/ls_unit_tests -tc="cpu_attention*" > $A/unit.txt 2>&1; echo "unit rc=$?"
grep -E "SKIPPED|largest|paged runs|test cases|assertions|ERROR|rms" $A/unit.txt | head -30
echo "--- ${SECONDS}s"
row() { grep -E "^ +[0-9]+ +16 " "$1" | awk '{printf "%s %s %s us %s; ", $1, $3, $10, $NF}'; }
for r in 1 2 3 4; do
  timeout 60 $B/ls_bench_cpu_attention_fp16 --ctx 1024,2048,4096,16384 --reps 31 --f16 off,on \
    > $A/fp16-$r.txt 2>&1
  echo "f16 round $r: host $(awk '/^ +16 /{print $2; exit}' $A/fp16-$r.txt) GB/s; $(row $A/fp16-$r.txt)"
done
echo "--- ${SECONDS}s"
timeout 60 $B/ls_bench_cpu_attention_fp16 --ctx 1024,4096 --reps 41 --f16 off,on --timeline --read \
  > $A/fp16-tl.txt 2>&1
grep -E "^ +(1024|4096) |timeline|calls where" $A/fp16-tl.txt
echo "--- ${SECONDS}s"
for r in 1 2 3; do
  for v in pool old; do
    timeout 40 $B/ls_bench_cpu_attention_$v --ctx 1024,2048,4096 --reps 31 > $A/$v-$r.txt 2>&1
    echo "$v round $r: host $(awk '/^ +16 /{print $2; exit}' $A/$v-$r.txt) GB/s; $(row $A/$v-$r.txt)"
  done
done
echo "--- ${SECONDS}s"
tar -xJf "$R/.gpubin/bin.txz" -C $B ./ls_gpu_tests || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $R/.ut && cd $R/.ut
LS_ATTN_F16=1 timeout 150 $B/ls_gpu_tests -tc="*match the CPU*,*hybrid plans*,*agree with the CPU*" \
  > $A/gpu-tests.txt 2>&1
echo "gpu tests (LS_ATTN_F16=1) rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $A/gpu-tests.txt | head
cd /tmp; echo "--- ${SECONDS}s"
(cd $OUT && tar -czf attn.tgz attn && rm -rf attn)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $((LIMIT - SECONDS)) -ge 220 ]; then
  mkdir -p $OUT/h200 && OUT=$OUT/h200 LIMIT=$((LIMIT - SECONDS)) bash "$R/bench/results/raw-2026-12-07-s57/call4/run.sh" "$R"
fi
ls -la $OUT
