#!/bin/bash
# Session 7, call 1: GPU tests on main (f32 KV / f32 GEMV oracle paths, the
# CI-time unity/PCH build); hf_check of the trained draft (F32, CPU and CUDA,
# tol 1e-4); CUDA perplexity under the oracle flags; batched decode on the
# GPU: 8b resident at widths 1-64, 70b hybrid at 24 GiB at widths 1, 8, 32.
set -u
O=$OUT; B=/tmp/b1; W=/tmp/w1; M=/tmp/m1; V=tests/data/kjv/valid.txt
mkdir -p $B $W $M
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]" | tee -a $O/log.txt; }
tar xJf .gpubin/s7bin1.txz -C $B && tar xJf .gpubin/ckpt-draft.txz -C $W || exit 2
cp model/weights/kjv-target-q8_0.gguf $B/layerstream-default.gguf
L=$B/layerstream
{ date -u; nproc; nvidia-smi -L; git log --oneline -1; } | tee $O/log.txt
(cd /tmp && timeout 240 $B/ls_gpu_tests) > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?" | tee -a $O/log.txt
tail -n 4 $O/gpu-tests.txt | tee -a $O/log.txt
grep -E "oracle|kv store f32" $O/gpu-tests.txt | tee -a $O/log.txt; el
timeout 60 $L convert $W/draft -o $W/draft-f32.gguf --quant f32 > $O/convert.txt 2>&1; echo "convert rc=$?" | tee -a $O/log.txt
for be in cpu cuda; do
  timeout 120 python3 tools/hf_check.py --gguf $W/draft-f32.gguf --hf-dir $W/draft --text $V \
    --offset 0 --n-prompt 256 --n-greedy 64 --tol 1e-4 --backend $be --device cuda --also-f64 \
    --layerstream $L --workdir $W/hf-$be --json $O/hf-draft-$be.json > $O/hf-draft-$be.txt 2>&1
  echo "hf_check draft $be rc=$?" | tee -a $O/log.txt
  grep -E "^\| (prompt|greedy)|PASS|FAIL" $O/hf-draft-$be.txt | tee -a $O/log.txt
done; el
for be in "--backend cpu" "--backend cuda"; do
  echo "-- perplexity draft F32 $be --act f32 --kv-type f32 (PyTorch 44.2628)" | tee -a $O/log.txt
  timeout 90 $L perplexity -m $W/draft-f32.gguf -f $V -c 512 $be --act f32 --kv-type f32 2>&1 | tail -2 | tee -a $O/log.txt
done; el
echo "== 8b Q4_K_M resident, batched decode" | tee -a $O/log.txt
timeout 120 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
timeout 200 $L bench -m $M/8b.gguf --batch 1,8,16,32,64 --prompt-tokens 128 -n 16 -c 512 --json $O/bench-8b-batch.json > $O/bench-8b-batch.txt 2>&1
echo "rc=$?" | tee -a $O/log.txt; grep -E "^\||plan|bound|error" $O/bench-8b-batch.txt | tee -a $O/log.txt; el
rm -f $M/8b.gguf
echo "== 70b Q4_K_M hybrid 24 GiB, batched decode" | tee -a $O/log.txt
timeout 200 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 240 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 16 -n 8 -c 256 --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?" | tee -a $O/log.txt; grep -E "^\||plan|CPU tier|bound|error" $O/bench-70b-batch.txt | tee -a $O/log.txt; el
