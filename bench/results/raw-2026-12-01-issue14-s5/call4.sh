#!/bin/bash
# Call 4 (session 5): the sweep after 1 and 4096 tokens, decode -f of a real
# text, a five-turn chat; the GPU tests and the attention unit tests.
O=$OUT; B=/tmp/b4; mkdir -p $B
tar xJf .gpubin/bin4.txz -C $B
date -u | tee $O/log.txt
BIN=$B OUT=$O STEPS=48 SWEEP=${SWEEP:-22,24,26} PARTS="sweep text chat" \
  bash scripts/gpu_hybrid_default_check.sh 2>&1 | tee -a $O/log.txt
(cd /tmp && $B/ls_unit_tests -tc="*attention*,*kv_cache*,*convert_f16*") > $O/unit.txt 2>&1; echo "unit rc=$?" | tee -a $O/log.txt
(cd /tmp && timeout 240 $B/ls_gpu_tests) > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?" | tee -a $O/log.txt
tail -3 $O/unit.txt $O/gpu-tests.txt | tee -a $O/log.txt
