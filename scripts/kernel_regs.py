#!/usr/bin/env python3
"""Registers and spills of one CUDA source's kernels, from ptxas, without a GPU.

Compiles FILE (a .cu under the repository) for sm_90 with `-Xptxas -v`, at
the working tree and, with --base REV, at that commit too (its sources from
`git archive`, into a temporary folder), and prints one row per kernel:
registers and spill bytes, beside the base's where both have it. Kernels
whose names differ only by a trailing template argument of the working tree
(a flag added at the end, e.g. `, false>`) are matched to the base's.

Why (session 50): a GEMV change that split a load from its decode made the
default kernels spill (48-848 bytes of stack), which the device showed only
as a slower run; ptxas says it in a minute here.

Usage: scripts/kernel_regs.py kernels/gemv_q8.cu [--base 1689bfb] [--grep gemv_q8_v5]
                              [--spills]   (only the kernels that spill in either)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nvcc():
    for c in ("/usr/local/cuda/bin/nvcc", "nvcc"):
        if os.path.isfile(c) or subprocess.run(["which", c], capture_output=True).returncode == 0:
            return c
    sys.exit("kernel_regs: nvcc not found")


def compile_info(src_root, rel):
    """{mangled name: (registers, stack, spill stores, spill loads)} of rel under src_root."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [nvcc(), "-std=c++20", "-O3", "-DNDEBUG", "-DLS_HAVE_CUDA=1", "-I" + src_root,
               "-arch=sm_90", "-Xptxas", "-v", "-c", os.path.join(src_root, rel),
               "-o", os.path.join(out, "k.o")]
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("kernel_regs: nvcc failed on %s:\n%s" % (rel, p.stderr[-4000:]))
    info, cur, spill = {}, None, (0, 0, 0)
    for line in p.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur, spill = m.group(1), (0, 0, 0)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and cur:
            spill = tuple(int(x) for x in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            info[cur] = (int(m.group(1)),) + spill
            cur = None
    return info


def demangle(names):
    p = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    out = p.stdout.split("\n")
    return [re.sub(r"\(anonymous namespace\)::|ls::", "", d) for d in out[:len(names)]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--base", help="a commit to compare with")
    ap.add_argument("--grep", default="", help="only kernels whose name contains this")
    ap.add_argument("--spills", action="store_true", help="only kernels that spill in either")
    a = ap.parse_args()
    if not os.path.isfile(a.file):
        sys.exit("kernel_regs: %s: no such file" % a.file)
    rel = os.path.relpath(os.path.abspath(a.file), ROOT)
    head = compile_info(ROOT, rel)
    base = {}
    if a.base:
        with tempfile.TemporaryDirectory() as tmp:
            arch = subprocess.run(["git", "-C", ROOT, "archive", a.base], capture_output=True)
            if arch.returncode != 0:
                sys.exit("kernel_regs: git archive %s failed" % a.base)
            subprocess.run(["tar", "-x", "-C", tmp], input=arch.stdout, check=True)
            base = compile_info(tmp, rel)
    names = sorted(head)
    dem = dict(zip(names, demangle(names)))
    bnames = sorted(base)
    bdem = {d: n for n, d in zip(bnames, demangle(bnames))}
    fmt = "%-4s %-3s %-5s %-5s"
    print("%-90s %s  %s" % ("kernel", "regs stack st ld (tree)", "(base)" if a.base else ""))
    for n in names:
        d = dem[n]
        if a.grep and a.grep not in d:
            continue
        b = bdem.get(d) or bdem.get(re.sub(r", (false|0)>(\(|$)", r">\2", d))
        h = head[n]
        bb = base.get(b) if b else None
        if a.spills and not (h[1] or (bb and bb[1])):
            continue
        # Long names without their parameter list (the last parenthesis),
        # keeping the template arguments, which tell the kernels apart.
        short = d[:d.rfind("(")] if len(d) > 90 and d.endswith(")") else d
        line = "%-90s %s" % (short[:90], fmt % h)
        if a.base:
            line += "  " + (fmt % bb if bb else "(none)")
        if h[1] or h[2]:
            line += "  SPILLS"
        print(line)


if __name__ == "__main__":
    main()
