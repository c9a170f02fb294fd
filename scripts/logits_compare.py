#!/usr/bin/env python3
"""Compare two backends' greedy decodes of one prompt (issue 20: CUDA against
the CPU with 8-bit activations), each made by
  layerstream logits -m MODEL --ids "..." --greedy N --greedy-logits ROWS.bin > IDS.txt
(the ids on one line; ROWS.bin the N x n_vocab float32 rows each id was
chosen from, row 0 the prompt's last).

Row s of the two runs is compared while the ids before it agree (both chose
from the same context). The bound, stated before measuring (the two backends
quantize x to 8 bits by one rule and differ only in the order they sum):
  - at every compared row, max |a - b| <= REL x the standard deviation of a's
    row (--rel, default 0.01);
  - the ids are equal, or they first differ at a step where a's two best
    logits are closer than twice that step's max |a - b| (a near tie that the
    rounding decides), never where a's choice was clear.
Prints one line; exits 1 when the bound is broken, 2 on bad input.
Usage: scripts/logits_compare.py A_IDS A_ROWS B_IDS B_ROWS [--rel 0.01]
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


def main(argv):
    rel = 0.01
    if "--rel" in argv:
        i = argv.index("--rel")
        rel = float(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    a_ids, a, v = load(argv[0], argv[1])
    b_ids, b, vb = load(argv[2], argv[3])
    if v != vb or len(a_ids) != len(b_ids):
        print(f"error: the runs differ in shape ({len(a_ids)} x {v} against {len(b_ids)} x {vb})",
              file=sys.stderr)
        return 2
    worst, worst_step, diverged, verdict = 0.0, -1, -1, "ok"
    for s in range(len(a_ids)):
        ra, rb = a[s * v:(s + 1) * v], b[s * v:(s + 1) * v]
        mean = sum(ra) / v
        std = math.sqrt(sum((x - mean) ** 2 for x in ra) / v) or 1.0
        d = max(abs(x - y) for x, y in zip(ra, rb))
        if d / std > worst:
            worst, worst_step = d / std, s
        if d > rel * std and verdict == "ok":  # the first step past the bound
            verdict = f"broken: step {s} differs by {d:.3g}, {d / std:.3g} of the row's std"
        if a_ids[s] != b_ids[s]:
            diverged = s
            top = sorted(ra, reverse=True)[:2]
            gap = top[0] - top[1]
            tie = gap <= 2 * d
            msg = (f"ids first differ at step {s} ({a_ids[s]} / {b_ids[s]}); a's top-2 gap "
                   f"{gap:.3g} against max |a-b| {d:.3g} there: "
                   f"{'a near tie' if tie else 'NOT a near tie'}")
            if not tie and verdict == "ok":
                verdict = "broken: " + msg
            break
    same = diverged < 0
    print(f"{'ids equal (' + str(len(a_ids)) + ')' if same else msg}; max |a-b| / row std "
          f"{worst:.3g} (step {worst_step}; bound {rel}); {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
