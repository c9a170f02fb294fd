#!/bin/bash
# Call 7 (session 6): issue 15's GPU run on the merged tree; issue 14's CPU
# attention on AVX-512 (unit tests, bench 1k-16k twice); perplexity on CUDA
# (resident and streamed) against the CPU on the same text.
O=$OUT; B=/tmp/b7; mkdir -p $B
tar xJf .gpubin/bin7.txz -C $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u | tee $O/log.txt; nproc | tee -a $O/log.txt; git log --oneline -1 | tee -a $O/log.txt
(cd /tmp && $B/ls_unit_tests -tc="*attention*,*kv_cache*,*convert_f16*,*hybrid balance*") > $O/unit.txt 2>&1; echo "unit rc=$?" | tee -a $O/log.txt
tail -n 3 $O/unit.txt | tee -a $O/log.txt
(cd /tmp && timeout 240 $B/ls_gpu_tests) > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?" | tee -a $O/log.txt
tail -n 4 $O/gpu-tests.txt | tee -a $O/log.txt
for r in 1 2; do
  echo "== attention bench run $r" | tee -a $O/log.txt
  $B/ls_bench_cpu_attention --threads 16 --reps 31 --ctx 1024,2048,4096,8192,16384 2>&1 | tail -9 | tee -a $O/log.txt
done
echo "== perplexity cpu vs cuda (tiny default model, f32 activations)" | tee -a $O/log.txt
for be in "--backend cpu" "--backend cuda" "--backend cuda --tiers C"; do
  echo "-- $be" | tee -a $O/log.txt
  timeout 120 $B/layerstream perplexity -f scripts/data/prompt-1k.txt -c 128 --act f32 $be 2>&1 | tail -3 | tee -a $O/log.txt
done
date -u | tee -a $O/log.txt
