#!/usr/bin/env python3
"""Cycles per iteration of a compiled kernel's hot loop, by llvm-mca.

The GPU machine's Xeon has no perf, and the device is often not lent, so
this is the way to weigh a CPU kernel's instruction mix on this machine
(session 41: the lane form's fused float step, 101 -> 88 cycles a chunk of
the direct tile at 8 tokens). It disassembles one function of an object
file, takes the loop with the most instructions matching --hot (the
innermost backward branch around them), and runs llvm-mca on its body with
the Xeon's scheduling model (LLVM 14 has no Sapphire Rapids model of its
own: icelake-server is the nearest). That model lets 512-bit code use port
1, which Intel's cores do not: session 42 found it ranking two forms of a
kernel the wrong way round (docs/architecture.md), so time on real hardware
too.

  scripts/mca_loop.py build/CMakeFiles/layerstream_core.dir/kernels/cpu/gemm_q8_direct_avx512.cpp.o \\
      'q4k_tileILi8ELb1ELb0E' [--hot vpdpbusd] [--mcpu icelake-server]

The function is the first symbol containing the given text (a mangled-name
fragment). Prints the loop's size, llvm-mca's cycles per iteration, its
block throughput bound and the instruction mix.
"""
import argparse
import collections
import re
import subprocess
import sys
import tempfile


def disassemble(obj, fragment):
    nm = subprocess.run(["nm", obj], capture_output=True, text=True)
    if nm.returncode:
        sys.exit(f"error: cannot read symbols of {obj}: {nm.stderr.strip()}")
    syms = nm.stdout
    names = [ln.split()[-1] for ln in syms.splitlines() if fragment in ln and " t " in ln or
             fragment in ln and " T " in ln]
    names = [n for n in names if not n.endswith(".cold")]
    if not names:
        sys.exit(f"error: no function in {obj} whose name contains {fragment!r}")
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={names[0]}", obj],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for ln in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)$", ln)
        if m:
            insns.append((int(m.group(1), 16), m.group(2).strip()))
    return names[0], insns


def hot_loop(insns, hot):
    best = None
    for i, (addr, text) in enumerate(insns):
        m = re.match(r"j\w+\s+([0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [t for a, t in insns[:i] if a >= target]
        n_hot = sum(1 for t in body if t.startswith(hot))
        if n_hot and (best is None or n_hot > best[0] or n_hot == best[0] and len(body) < len(best[1])):
            best = (n_hot, body)
    if best is None:
        sys.exit(f"error: no loop around {hot} instructions")
    return [re.sub(r"<[^>]*>", "", t) for t in best[1] if not t.startswith("j")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("obj")
    ap.add_argument("function")
    ap.add_argument("--hot", default="vpdpbusd", help="instruction the loop is chosen by")
    ap.add_argument("--mcpu", default="icelake-server")
    ap.add_argument("--iterations", type=int, default=200)
    a = ap.parse_args()
    name, insns = disassemble(a.obj, a.function)
    body = hot_loop(insns, a.hot)
    with tempfile.NamedTemporaryFile("w", suffix=".s") as f:
        f.write("\n".join(body) + "\n")
        f.flush()
        mca = subprocess.run(["llvm-mca", f"-mcpu={a.mcpu}", f"-iterations={a.iterations}", f.name],
                             capture_output=True, text=True)
    if mca.returncode:
        sys.exit(f"error: llvm-mca failed: {mca.stderr.strip()}")
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", mca.stdout).group(1))
    rthr = re.search(r"Block RThroughput:\s+([\d.]+)", mca.stdout).group(1)
    mix = collections.Counter(t.split()[0] for t in body)
    print(f"{name}: a loop of {len(body)} instructions ({mix[a.hot]} {a.hot})")
    print(f"llvm-mca -mcpu={a.mcpu}: {cycles / a.iterations:.1f} cycles an iteration, "
          f"block throughput bound {rthr}")
    print("mix: " + ", ".join(f"{k} {v}" for k, v in mix.most_common(12)))


if __name__ == "__main__":
    main()
