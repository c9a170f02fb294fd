#!/usr/bin/env bash
# Session 15, call 1: CPU attention of one 70b layer, spans (AttnCpuTuning::span) and
# value prefetch targets, three rounds in alternating order, beside --read.
set -u
O=$OUT; mkdir -p $O/bin && tar xJf .gpubin/att.txz -C $O/bin
B=$O/bin/ls_bench_cpu_attention
{ date -u; lscpu | grep -E "Model name|MHz|Thread|Core|L2|L3|Flags" | cut -c1-400; } > $O/sys.txt 2>&1
for r in 1 2 3; do
  if [ $r = 2 ]; then SP=256,128,64,32,16; else SP=16,32,64,128,256; fi
  $B --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --span $SP --prefetch k1v2,k1v1,k2v2 \
     --ahead 0,16 --json $O/r$r.json > $O/r$r.txt 2>&1
done
$B --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --span 256,32 --read > $O/read.txt 2>&1
# Summary: best config per ctx per round, and spans at the default prefetch.
python3 - <<'PY'
import json,os,collections
O=os.environ['OUT']
for r in (1,2,3):
    rows=json.load(open(f"{O}/r{r}.json"))
    print(f"round {r} host {rows[0]['host_gbps']:.1f}")
    by=collections.defaultdict(list)
    for x in rows: by[x['ctx']].append(x)
    for ctx,xs in sorted(by.items()):
        d={ (x['span'],x['prefetch'],x['ahead']):x['ratio'] for x in xs}
        line=" ".join(f"s{s}:{d.get((s,'k1v2',0),0):.2f}" for s in (16,32,64,128,256))
        best=max(xs,key=lambda x:x['ratio'])
        print(f"  {ctx:6d} k1v2/a0 {line} | best {best['ratio']:.2f} s{best['span']} {best['prefetch']} a{best['ahead']}")
PY
grep -E "^ +[0-9]+ +16 read" $O/read.txt | awk '{print "read", $1, $NF}'
