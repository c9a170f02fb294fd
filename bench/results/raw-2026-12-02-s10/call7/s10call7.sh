#!/bin/bash
# Session 10, call 7: the streamed and batched pipeline tests with the
# session's kernels (programmatic dependent launch inside the graphs of
# streamed layers): bit-identity of every tier mix with resident decode.
set -u
O=$OUT/l; mkdir -p $O; B=/tmp/b10; mkdir -p $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 280 $B/ls_gpu_tests -d -tc="cuda streaming*,cuda pipeline*" -tce="*1b Q4_K_M*" > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -E "ERROR|FAILED|MESSAGE|^[0-9.]+ s:" $O/gpu_tests.log | head -20; tail -3 $O/gpu_tests.log
tar -cJf $OUT/s10call7.txz -C $O .
