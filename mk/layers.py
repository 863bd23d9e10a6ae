#!/usr/bin/env python3
"""Checks the layering of the build: run as `mk/layers.py BUILD-DIR`.

1. No cycle between the files of one folder: a file's object may use the
   functions and data of another file of its folder only if that file uses
   nothing of it, directly or through others (from `nm`).
2. No internal header used across folders: a folder's *_int.h headers,
   and the helpers listed in INTERNAL, are included only from that folder
   (from the compiler's .d dependency files).

The include paths of the Makefile (INCLUDES_*) keep a layer from
including the headers of a layer above it; this checks what they cannot.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import subprocess
import sys

FOLDERS = ["format", "record", "replay", "analysis", "vmtrace"]
# Headers that are a folder's own business, besides its *_int.h files.
INTERNAL = {"analysis/u64tab.h", "record/u64map.h", "replay/addrmap.h",
            "replay/loadint.h", "replay/execint.h",
            "replay/arena.h", "replay/runfiles.h", "format/codec.h"}


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRCV":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            used.add(f[1])
    return defined, used


def cycles(build, folder):
    objs = sorted(glob.glob(f"{build}/obj/{folder}/*.o"))
    names = [os.path.basename(o)[:-2] for o in objs]
    syms = {n: symbols(o) for n, o in zip(names, objs)}
    owner = {s: n for n in names for s in syms[n][0]}
    edges = {n: sorted({owner[s] for s in syms[n][1] if owner.get(s, n) != n}) for n in names}
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for n in names:
        if n not in index:
            visit(n)
    return found


def internal_uses(build):
    bad = []
    for d in glob.glob(f"{build}/obj/*/*.d"):
        folder = os.path.basename(os.path.dirname(d))
        if folder not in FOLDERS:
            continue  # tests reach into everything
        text = open(d).read().replace("\\\n", " ")
        deps = text.split(":", 1)[1].split() if ":" in text else []
        for h in deps:
            h = os.path.normpath(h)
            top = h.split("/", 1)[0]
            if top in FOLDERS and top != folder and (h.endswith("_int.h") or h in INTERNAL):
                bad.append(f"{folder}/{os.path.basename(d)[:-2]}.c includes {h}")
    return sorted(set(bad))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    problems = []
    for folder in FOLDERS:
        for comp in cycles(build, folder):
            problems.append(f"layers: {folder}/: cycle between " + ", ".join(c + ".c" for c in comp))
    for b in internal_uses(build):
        problems.append(f"layers: {b}, internal to its folder")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
