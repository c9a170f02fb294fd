#!/bin/bash
# Session 54, call 8 (on call 7's machine, still warm): issue 14's table,
# the default at 1k-16k, eight rounds. Run as one command line:
# B=/tmp/b; mkdir -p $B $OUT/r; tar -xJf .gpubin/bin.txz -C $B; for r in 1 2 3 4 5 6 7 8; do timeout 30 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $OUT/r/table-$r.txt 2>&1; echo "round $r rc=$?"; grep -E "^ +16 +[0-9.]+ |^ +(1024|2048|4096|16384) " $OUT/r/table-$r.txt; done; cat /proc/cpuinfo | grep -m1 "model name"; uptime
