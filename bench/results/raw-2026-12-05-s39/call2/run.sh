#!/bin/bash
# Session 39, call 2: where a GPU layer's time goes at widths 1, 8 and 32
# (the width routing measured 0.19 / 0.59 / 0.74 ms a 70b layer, where the
# matmuls alone add to about 0.26 ms at width 8). ncu, graphs off, on a
# 4-layer 70b-shaped Q4_K_M (resident): each kernel's time and DRAM bytes.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s39/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1); echo "ncu: $NCU"
nvidia-smi --query-gpu=name --format=csv,noheader
F=$M/70b4-q4km.gguf
$B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied --layers 4; echo "synth rc=$?"
export LS_CUDA_GRAPHS=0
for w in 1 8 32; do
  timeout 130 $NCU --clock-control none --launch-count 1500 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
    --log-file $O/w$w.csv $B/layerstream bench -m $F --batch $w --prompt-tokens 16 -n 3 -c 64 > $O/w$w.txt 2>&1
  echo "width $w rc=$?"; tail -3 $O/w$w.txt
done
# one sequence, 8 positions in a step (the verify step's shape): a prompt of 8
timeout 130 $NCU --clock-control none --launch-count 1500 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  --log-file $O/p8.csv $B/layerstream bench -m $F --prompt-tokens 8 -n 2 -c 64 > $O/p8.txt 2>&1
echo "prompt 8 rc=$?"; tail -3 $O/p8.txt
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
