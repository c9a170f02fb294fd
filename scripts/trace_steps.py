#!/usr/bin/env python3
"""Where a warm step's time goes, per track and span name, from a layerstream
Chrome trace (--trace FILE, plain or .xz).

    scripts/trace_steps.py run.json.xz [--from-step 8] [--to-step N]

A step runs from the end of the sampler's "sample" span of the step before
to the end of its own. Per step: its length; then, summed over the steps,
each track's time in each span name (ms a step) and the share of the step.
The compute track's names say what the critical path did: "layers" / "layer"
(GPU work), "to cpu", "wait cpu", "from cpu" (a CPU-tier layer's hand-over
and wait), "wait layer" (waiting for a copy), "head", "embed". Last, a hybrid
plan's CPU layers by the run of streamed layers before each, with the mean
"to cpu": runs longer than the device slots stall there. And the steps whose
GPU began its first layer over 5 ms after the step's start.
"""
import argparse
import collections
import json
import lzma


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--from-step", type=int, default=8)
    ap.add_argument("--to-step", type=int, default=10**9)
    a = ap.parse_args()
    ev = load(a.trace)
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in ev if e.get("ph") == "X"]
    # Step ends: the sampler's "sample" spans, by step.
    ends = {}
    for e in spans:
        if names.get(e["tid"]) == "sampler" and e["name"] == "sample":
            s = e["args"].get("step", -1)
            ends[s] = max(ends.get(s, 0), e["ts"] + e["dur"])
    steps = sorted(s for s in ends if a.from_step <= s <= a.to_step and s - 1 in ends)
    if not steps:
        print("no steps in range")
        return
    t0, t1 = ends[steps[0] - 1], ends[steps[-1]]
    lens = [(ends[s] - ends[s - 1]) / 1e3 for s in steps]
    n = len(steps)
    print(f"steps {steps[0]}..{steps[-1]} ({n}): mean {sum(lens)/n:.1f} ms, min {min(lens):.1f}, max {max(lens):.1f}")
    per = collections.defaultdict(float)
    for e in spans:
        b, d = e["ts"], e["dur"]
        lo, hi = max(b, t0), min(b + d, t1)
        if hi > lo:
            per[(names.get(e["tid"], str(e["tid"])), e["name"])] += hi - lo
    span_ms = (t1 - t0) / 1e3 / n
    by_track = collections.defaultdict(list)
    for (tr, nm), us in per.items():
        by_track[tr].append((us / 1e3 / n, nm))
    for tr in sorted(by_track):
        items = sorted(by_track[tr], reverse=True)
        s = ", ".join(f"{nm} {ms:.1f}" for ms, nm in items[:8])
        print(f"  {tr:12s} ({sum(ms for ms, _ in items) / span_ms * 100:5.1f} %): {s}")
    # The compute track's spans of one middle step in order (name, layer, ms).
    mid = steps[len(steps) // 2]
    row = sorted((e["ts"], e["name"], e["args"].get("layer", -1), e["dur"] / 1e3)
                 for e in spans if names.get(e["tid"]) == "compute" and e["args"].get("step") == mid)
    print(f"  compute in step {mid}: " + " ".join(f"{nm}@{l}:{ms:.1f}" for _, nm, l, ms in row if ms >= 0.3))
    # A hybrid step's CPU layers by the run of streamed layers just before
    # each (copied in that step, since the CPU layer before it): with few
    # device slots a run longer than the slots holds the copy engine while
    # the CPU computes, and shows as a long "to cpu" (the export waits for
    # the GPU, which waits for the run's last copy).
    by_run = collections.defaultdict(list)
    for s in steps:
        cpu = {}
        for e in spans:
            if e["args"].get("step") != s or names.get(e["tid"]) != "compute":
                continue
            if e["name"] == "to cpu":
                cpu[e["args"].get("layer", -1)] = e["dur"] / 1e3
        copied = {e["args"].get("layer", -1) for e in spans
                  if e["args"].get("step") == s and names.get(e["tid"]) == "gpu-copy"}
        prev = -1
        for l in sorted(cpu):
            run = sum(1 for k in copied if prev < k < l)
            by_run[run].append(cpu[l])
            prev = l
    if by_run:
        print("  CPU layers by the streamed run before them: " + ", ".join(
            f"run {r}: {len(v)} layers, to cpu mean {sum(v)/len(v):.1f} ms"
            for r, v in sorted(by_run.items())))
    # When the GPU began each step's work (its first layer span) after the
    # step's start: a step whose GPU waits there waits behind something on
    # the compute stream (session 35: the step's inputs, copied behind the
    # first streamed layers on the copy engine, 26-28 ms in half the steps).
    first = {}
    for e in spans:
        if names.get(e["tid"]) == "gpu-compute" and e["name"] in ("layer", "layers"):
            s = e["args"].get("step")
            if s in ends and s - 1 in ends and s in steps:
                first[s] = min(first.get(s, float("inf")), e["ts"])
    if first:
        late = [s for s in first if first[s] - ends[s - 1] > 5000]
        ontime = [s for s in first if s not in late]
        mean = lambda ss: sum((ends[s] - ends[s - 1]) / 1e3 for s in ss) / len(ss) if ss else 0
        worst = max((first[s] - ends[s - 1]) / 1e3 for s in first)
        print(f"  GPU's first layer over 5 ms after the step's start: {len(late)} of {len(first)} steps "
              f"(at most {worst:.1f} ms; their mean step {mean(late):.1f} ms, the others' {mean(ontime):.1f})")
    # What the steps lost over the median step, and what changed sides: a
    # hybrid run's first decode steps move key/value rows to whichever side
    # a CPU-tier layer now runs on, and the width routing's placement may
    # still be settling (session 45: 0.8-1.0 s of a 64-step run at width 32,
    # down to 0.4 s).
    med = sorted(lens)[n // 2]
    cpu_set, moves = {}, collections.defaultdict(float)
    for e in spans:
        st = e["args"].get("step")
        if st not in steps:
            continue
        tr = names.get(e["tid"])
        if tr == "cpu-compute" and e["name"] == "cpu layer":
            cpu_set.setdefault(st, set()).add(e["args"].get("layer", -1))
        if tr == "compute" and e["name"] in ("kv to cpu", "kv from cpu"):
            moves[st] += e["dur"] / 1e3
    changes, prev = [], None
    for st in steps:
        cur = frozenset(cpu_set.get(st, ()))
        if prev is not None and cur != prev:
            changes.append(f"{st} ({len(cur ^ prev)} layers)")
        prev = cur
    excess = sum(x - med for x in lens if x > med)
    print(f"  over the median step ({med:.1f} ms): {excess:.0f} ms in all; rows moved between the "
          f"caches {sum(moves.values()):.0f} ms in {len(moves)} steps; the CPU's layers changed at "
          f"step {', '.join(changes) if changes else 'none'}")


if __name__ == "__main__":
    main()
