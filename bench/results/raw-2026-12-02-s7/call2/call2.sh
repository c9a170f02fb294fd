#!/bin/bash
# Session 7, call 2: hf_check of the trained target (F32 through convert,
# CPU and CUDA, tol 1e-4, 256 positions, 64 greedy tokens); the 8b batched
# decode again with bench's full-width window (widths 1-64).
set -u
O=$OUT; B=/tmp/b2; W=/tmp/w2; M=/tmp/m2; V=tests/data/kjv/valid.txt
mkdir -p $B $W $M
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
tar xJf .gpubin/s7bin2.txz -C $B && tar xJf .gpubin/ckpt-target.txz -C $W || exit 2
cp model/weights/kjv-target-q8_0.gguf $B/layerstream-default.gguf
L=$B/layerstream
date -u; nproc; nvidia-smi -L; git log --oneline -1
(cd $W/target && sha256sum model.safetensors)
timeout 60 $L convert $W/target -o $W/target-f32.gguf --quant f32 > $O/convert.txt 2>&1; echo "convert rc=$?"
for be in cpu cuda; do
  timeout 150 python3 tools/hf_check.py --gguf $W/target-f32.gguf --hf-dir $W/target --text $V \
    --offset 0 --n-prompt 256 --n-greedy 64 --tol 1e-4 --backend $be --device cuda --also-f64 \
    --layerstream $L --workdir $W/hf-$be --json $O/hf-target-$be.json > $O/hf-target-$be.txt 2>&1
  echo "hf_check target $be rc=$?"
  grep -E "^\| (prompt|greedy)|PASS|FAIL" $O/hf-target-$be.txt
done; el
echo "== 8b Q4_K_M resident, batched decode (full-width window)"
timeout 120 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
timeout 240 $L bench -m $M/8b.gguf --batch 1,8,16,32,64 --prompt-tokens 128 -n 16 -c 512 --json $O/bench-8b-batch.json > $O/bench-8b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||plan|bound|error" $O/bench-8b-batch.txt; el
