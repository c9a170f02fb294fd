#!/usr/bin/env python3
"""Compare two backends' greedy decodes of one prompt (issue 20: CUDA against
the CPU with 8-bit activations), each made by
  layerstream logits -m MODEL --ids "..." --greedy N --greedy-logits ROWS.bin > IDS.txt
(the ids on one line; ROWS.bin the N x n_vocab float32 rows each id was
chosen from, row 0 the prompt's last).

Row s of the two runs is compared while the ids before it agree (both chose
from the same context). The bound is the one the GPU test "cuda backend:
logits and 64 greedy tokens match the CPU backend, every quant type" states:
  - at every compared row, max |a - b| <= REL x max |a| of the row (--rel:
    2e-2 with 8-bit activations, the format's rounding: a last-bit
    difference in x moves a value to the next int8 step; 1e-3 with f32);
  - the ids are equal, or they first differ at a step where a's two best
    logits are within REL x max |a| (a near tie), never where a's choice
    was clear.
The largest difference is also printed against the row's standard deviation.
With --bound-from REF_IDS REF_ROWS the bound is instead what the format
itself moves a's logits: the largest max |a - ref| / max |a| over a's rows
whose earlier ids ref shares (a: the CPU with q8, ref: the CPU with f32),
times REL (then default 1), and never below the f32 bound, 1e-3 (types
with no 8-bit path compute in f32 on both backends). The fixed 2e-2 was fitted on the tiny model; on
the 1b the CPU's own q8 moves its logits by 0.022-0.024 of max |a|.
Prints one line; exits 1 when the bound is broken, 2 on bad input.
Usage: scripts/logits_compare.py A_IDS A_ROWS B_IDS B_ROWS [--rel R] [--bound-from REF_IDS REF_ROWS]
"""
import array
import math
import sys


def load(ids_path, rows_path):
    try:
        with open(ids_path) as f:
            ids = [int(x) for x in f.read().split()]
        rows = array.array("f")
        with open(rows_path, "rb") as f:
            rows.frombytes(f.read())
    except (OSError, ValueError) as e:
        sys.exit(f"error: {ids_path} / {rows_path}: {e}")
    if not ids or len(rows) % len(ids):
        sys.exit(f"error: {rows_path} holds {len(rows)} floats, not a whole row for each of "
                 f"{len(ids)} ids in {ids_path}")
    if sys.byteorder != "little":
        rows.byteswap()
    return ids, rows, len(rows) // len(ids)


def own_error(a_ids, a, r_ids, r, v):
    """The largest max |a - r| / max |a| over the rows whose earlier ids agree."""
    worst = 0.0
    for s in range(min(len(a_ids), len(r_ids))):
        ra, rr = a[s * v:(s + 1) * v], r[s * v:(s + 1) * v]
        worst = max(worst, max(abs(x - y) for x, y in zip(ra, rr)) / (max(abs(x) for x in ra) or 1.0))
        if a_ids[s] != r_ids[s]:
            break
    return worst


def main(argv):
    rel, ref = None, None
    if "--rel" in argv:
        i = argv.index("--rel")
        rel = float(argv[i + 1])
        del argv[i:i + 2]
    if "--bound-from" in argv:
        i = argv.index("--bound-from")
        ref = argv[i + 1:i + 3]
        del argv[i:i + 3]
    if len(argv) != 4 or (ref is not None and len(ref) != 2):
        print(__doc__, file=sys.stderr)
        return 2
    a_ids, a, v = load(argv[0], argv[1])
    b_ids, b, vb = load(argv[2], argv[3])
    own = ""
    if ref is not None:
        r_ids, r, vr = load(ref[0], ref[1])
        if vr != v:
            print(f"error: {ref[1]} has rows of {vr}, not {v}", file=sys.stderr)
            return 2
        e = own_error(a_ids, a, r_ids, r, v)
        own = f"; the format's own error {e:.3g}"
        rel = max((1.0 if rel is None else rel) * e, 1e-3)
    elif rel is None:
        rel = 2e-2
    if v != vb or len(a_ids) != len(b_ids):
        print(f"error: the runs differ in shape ({len(a_ids)} x {v} against {len(b_ids)} x {vb})",
              file=sys.stderr)
        return 2
    worst, worst_std, worst_step, diverged, verdict = 0.0, 0.0, -1, -1, "ok"
    for s in range(len(a_ids)):
        ra, rb = a[s * v:(s + 1) * v], b[s * v:(s + 1) * v]
        mean = sum(ra) / v
        std = math.sqrt(sum((x - mean) ** 2 for x in ra) / v) or 1.0
        big = max(abs(x) for x in ra) or 1.0
        d = max(abs(x - y) for x, y in zip(ra, rb))
        if d / big > worst:
            worst, worst_std, worst_step = d / big, d / std, s
        if d > rel * big and verdict == "ok":  # the first step past the bound
            verdict = f"broken: step {s} differs by {d:.3g}, {d / big:.3g} of max |a|"
        if a_ids[s] != b_ids[s]:
            diverged = s
            top = sorted(ra, reverse=True)[:2]
            gap = top[0] - top[1]
            tie = gap <= rel * big
            msg = (f"ids first differ at step {s} ({a_ids[s]} / {b_ids[s]}); a's top-2 gap "
                   f"{gap:.3g} = {gap / big:.3g} of max |a|: "
                   f"{'a near tie' if tie else 'NOT a near tie'}")
            if not tie and verdict == "ok":
                verdict = "broken: " + msg
            break
    same = diverged < 0
    print(f"{'ids equal (' + str(len(a_ids)) + ')' if same else msg}; max |a-b| / max |a| "
          f"{worst:.3g} (step {worst_step}, {worst_std:.3g} of the row's std; bound {rel:.3g}"
          f"{own}); {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
