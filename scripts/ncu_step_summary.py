#!/usr/bin/env python3
"""Summarise an `ncu --csv` log of a short decode: each kernel of the last
step (between the last two argmax kernels), grouped by (name, grid, block),
with its time and DRAM bytes, largest first.

Made in session 16 to find where a resident decode step's time goes
(bench/results/2026-12-03-h200-s16.md). The log comes from, on the GPU
machine:
  ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum \
      --csv --log-file step.csv layerstream decode -m MODEL -p Hello -n 3 --temp 0
Usage: scripts/ncu_step_summary.py step.csv
"""
import collections
import csv
import re
import sys


def main(path):
    try:
        with open(path) as f:
            rows = list(csv.reader(line for line in f if line.startswith('"')))
    except OSError as e:
        sys.exit(f"error: cannot read {path}: {e.strerror}")
    if not rows:
        sys.exit(f"error: {path} holds no ncu CSV rows")
    col = {h: i for i, h in enumerate(rows[0])}
    kernels = collections.OrderedDict()
    for r in rows[1:]:
        e = kernels.setdefault(int(r[col["ID"]]), {
            "name": re.sub(r"\(.*", "", r[col["Kernel Name"]])[:60],
            "grid": r[col["Grid Size"]], "block": r[col["Block Size"]], "us": 0.0, "mb": 0.0})
        unit, value = r[col["Metric Unit"]], float(r[col["Metric Value"]].replace(",", ""))
        if r[col["Metric Name"]] == "gpu__time_duration.sum":
            e["us"] = value * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
                               "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        else:
            e["mb"] = value * {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1) / 1e6
    ids = list(kernels)
    print(f"kernels {len(ids)}, total {sum(e['us'] for e in kernels.values()):.1f} us")
    ends = [i for i in ids if "argmax" in kernels[i]["name"]]
    if len(ends) < 2:
        sys.exit("error: fewer than two argmax kernels, so no whole step to summarise (decode -n 3)")
    step = [i for i in ids if ends[-2] < i <= ends[-1]]
    agg = collections.OrderedDict()
    for i in step:
        e = kernels[i]
        a = agg.setdefault((e["name"], e["grid"], e["block"]), [0, 0.0, 0.0])
        a[0] += 1
        a[1] += e["us"]
        a[2] += e["mb"]
    print(f"last step: {len(step)} kernels, {sum(a[1] for a in agg.values()):.1f} us")
    for (name, grid, block), (n, us, mb) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        gbs = mb / us * 1e3 if us else 0.0
        print(f"{n:5d} {us:9.1f} us {mb:8.1f} MB {gbs:6.0f} GB/s  {name} {grid} {block}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/ncu_step_summary.py step.csv")
    main(sys.argv[1])
