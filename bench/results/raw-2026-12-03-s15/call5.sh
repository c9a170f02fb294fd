#!/usr/bin/env bash
# Session 15, call 5: the session-14 CPU attention (sb_old) beside the same kernel with each
# query vector of the scores loop pinned in a register (sb_pin: 10 loads per 16 FMAs instead of
# 18; same arithmetic), AVX-512 and AVX2 variants, 16 threads, three rounds in alternating order.
set -u
O=$OUT; mkdir -p $O/bin && tar xJf .gpubin/att.txz -C $O/bin
for r in 1 2 3; do
  if [ $r = 2 ]; then L="sb_pin sb_old"; else L="sb_old sb_pin"; fi
  for b in $L; do
    $O/bin/$b --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --isa avx512,avx2 --json $O/$b-$r.json > $O/$b-$r.txt 2>&1
  done
done
python3 - <<'PY'
import json,os
O=os.environ['OUT']
for r in (1,2,3):
    for b in ("sb_old","sb_pin"):
        d=json.load(open(f"{O}/{b}-{r}.json"))
        print(f"round {r} {b}: host {d['rows'][0]['host_gbps']:.1f}")
        for ctx in (1024,2048,4096,16384):
            print(f"  {ctx:6d} " + " ".join(f"{x['isa']}:{x['ratio']:.2f} ({x['us_median']:.0f} us)" for x in d['rows'] if x['ctx']==ctx))
PY
