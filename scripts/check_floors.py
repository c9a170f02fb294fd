#!/usr/bin/env python3
"""The floor plan, checked: every `#include "..."` of the project's source
folders against the table below (Chromium's checkdeps is the model).

A folder is a floor; a file may include its own floor and what its row of the
table allows, which is always something below it. A violation is printed as
`file:line: #include "path": rule` and the script exits 1; a clean tree prints
one line and exits 0. docs/architecture.md explains the floors.

Usage: scripts/check_floors.py [--root DIR]   (default: the checkout holding
this script). CI runs it first in scripts/test.sh; tests/scripts/
test_check_floors.sh proves it fails on a planted wrong include.
"""
import argparse
import fnmatch
import os
import re
import sys

# ---- The floor plan -------------------------------------------------------------
# Top to bottom. A file belongs to the first row whose patterns match its path
# (so the engine, six files of actors/, is picked out before the actors are).
# "may include" names floors (all their files) or single files, and only ones
# below (the script checks that too); "*" is anything.
FLOORS = [
    # floor     its files                                   may include, besides itself
    ("tests",   "tests/*",                                  "*"),
    ("tools",   "tools/*",                                  "engine actors model kernels io runtime"),
    ("engine",  "actors/engine.h actors/engine.cpp "
                "actors/pipeline.h actors/pipeline.cpp "
                "actors/generator.h actors/generator.cpp",  "actors model kernels io runtime"),
    ("actors",  "actors/*",                                 "model kernels io runtime"),
    ("model",   "model/*",                                  "kernels io runtime"),
    # Pure functions of buffers: of the floors below, the type table, errors as
    # values (CUDA's too), the thread pool and the A/B switches' reader.
    ("kernels", "kernels/*",                                "io/ggml_type.h runtime/status.h "
                                                            "runtime/cuda_util.cuh runtime/thread_pool.h "
                                                            "runtime/env.h"),
    ("io",      "io/*",                                     "runtime"),
    ("runtime", "runtime/*",                                ""),  # the ground floor
]
FLOORS = [(name, files.split(), allowed.split()) for name, files, allowed in FLOORS]

SOURCE_SUFFIXES = (".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def floor_of(path):
    """The row index of the floor a project path belongs to, or None."""
    for i, (_, patterns, _) in enumerate(FLOORS):
        if any(fnmatch.fnmatchcase(path, p) for p in patterns):
            return i
    return None


def check_table():
    """The table itself must be layered: a row may only name what lies below it."""
    names = [name for name, _, _ in FLOORS]
    errors = []
    for i, (name, _, allowed) in enumerate(FLOORS):
        for a in allowed:
            if a == "*":
                continue
            j = names.index(a) if a in names else floor_of(a)
            if j is None:
                errors.append("floor %s: may include %r, which is no floor or file of one" % (name, a))
            elif j <= i:
                errors.append("floor %s: may include %s, which is not below it" % (name, a))
    return errors


def resolve(root, src, inc):
    """The project path an include names: beside the including file first (as
    the compiler looks), else from the root. None: not a project file."""
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if not here.startswith("..") and os.path.isfile(os.path.join(root, here)):
        return here.replace(os.sep, "/")
    path = os.path.normpath(inc).replace(os.sep, "/")
    return path if floor_of(path) is not None else None


def rule_text(i):
    name, _, allowed = FLOORS[i]
    if allowed == ["*"]:
        return "%s may include anything" % name
    if not allowed:
        return "%s is the ground floor: it may include only itself" % name
    return "%s may include itself and %s" % (name, ", ".join(allowed))


def violation(src_floor, path):
    """Why `path` may not be included from floor row `src_floor`, or None."""
    name, _, allowed = FLOORS[src_floor]
    dst_floor = floor_of(path)
    if dst_floor is None or dst_floor == src_floor or "*" in allowed:
        return None
    if FLOORS[dst_floor][0] in allowed or path in allowed:
        return None
    dst = FLOORS[dst_floor][0]
    if dst_floor < src_floor:
        return "%s is above %s (%s)" % (dst, name, rule_text(src_floor))
    return "%s may not use %s (%s)" % (name, path, rule_text(src_floor))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.abspath(ap.parse_args().root)

    table_errors = check_table()
    if table_errors:
        for e in table_errors:
            print("check_floors: the table is not layered: " + e, file=sys.stderr)
        return 2

    folders = sorted({p.split("/")[0] for _, pats, _ in FLOORS for p in pats})
    n_files = n_includes = 0
    problems = []
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_SUFFIXES):
                    continue
                src = os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/")
                src_floor = floor_of(src)
                if src_floor is None:
                    continue
                n_files += 1
                with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        n_includes += 1
                        path = resolve(root, src, m.group(1))
                        if path is None:
                            continue
                        why = violation(src_floor, path)
                        if why:
                            problems.append('%s:%d: #include "%s": %s' % (src, lineno, m.group(1), why))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("check_floors: %d include(s) break the floor plan (the table: scripts/check_floors.py)"
              % len(problems), file=sys.stderr)
        return 1
    print("check_floors: %d files, %d includes, all within the floor plan" % (n_files, n_includes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
