#!/bin/bash
# Call 10 (session 6): the CPU kernels' width-independence on AVX-512 (matmul
# unit tests, the batched pipeline test), then issue 16's training (lean).
mkdir -p /tmp/b10 && tar xJf .gpubin/bin10.txz -C /tmp/b10
(cd /tmp && timeout 70 /tmp/b10/ls_unit_tests -tc="*matmul*,pipeline batch*,*act_q8*,*q8*") > $OUT/unit-avx512.txt 2>&1
echo "unit rc=$?"; tail -n 4 $OUT/unit-avx512.txt
bash tools/train/run_on_gpu.sh lean
