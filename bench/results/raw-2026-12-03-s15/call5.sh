#!/usr/bin/env bash
# Session 15, call 5: the session-14 CPU attention (sb_old of call 4, = the tree's kernel) with the
# AVX2 variant beside AVX-512 at 16 threads (does a narrower ISA keep a higher all-core clock?),
# three rounds in alternating order.
set -u
O=$OUT; mkdir -p $O/bin && tar xJf .gpubin/att.txz -C $O/bin
for r in 1 2 3; do
  if [ $r = 2 ]; then I=avx2,avx512; else I=avx512,avx2; fi
  $O/bin/sb_old --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --isa $I --json $O/isa$r.json > $O/isa$r.txt 2>&1
done
python3 - <<'PY'
import json,os
O=os.environ['OUT']
for r in (1,2,3):
    d=json.load(open(f"{O}/isa{r}.json"))
    print(f"round {r}: host {d['rows'][0]['host_gbps']:.1f}")
    for ctx in (1024,2048,4096,16384):
        print(f"  {ctx:6d} " + " ".join(f"{x['isa']}:{x['ratio']:.2f} ({x['us_median']:.0f} us)" for x in d['rows'] if x['ctx']==ctx))
PY
