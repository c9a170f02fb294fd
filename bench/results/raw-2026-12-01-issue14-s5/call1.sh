#!/bin/bash
# Call 1 (session 5): CPU attention variants against the host bound, the
# AVX-512 attention unit tests, the GPU tests.
O=$OUT; B=/tmp/b; mkdir -p $B; tar xJf .gpubin/bin1.txz -C $B
{ date -u; lscpu; cat /proc/cpuinfo | grep -m1 flags; nvidia-smi; } > $O/sys.txt 2>&1
{
for v in old A B C A B C old; do echo "== $v"; $B/bench_$v --threads 8,16 --ctx 1024,4096,16384 --reps 15 2>&1 | tail -7; done
echo "== A scaling"; $B/bench_A --threads 1,2,4,8,12,16 --ctx 4096 --reps 15 2>&1 | tail -7
} > $O/attn.txt 2>&1
(cd /tmp && $B/ls_unit_tests -tc="*attention*") > $O/unit-attn.txt 2>&1; echo "unit rc=$?"
(cd /tmp && timeout 300 $B/ls_gpu_tests) > $O/gpu-tests.txt 2>&1; echo "gpu rc=$?"
tail -4 $O/unit-attn.txt $O/gpu-tests.txt; cat $O/attn.txt
