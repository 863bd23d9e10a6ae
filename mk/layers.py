#!/usr/bin/env python3
"""Checks the layering of the build: run as `mk/layers.py BUILD-DIR`.

1. No cycle between the files of one folder (its subfolders included): a
   file's object may use the functions and data of another file of its
   folder only if that file uses nothing of it, directly or through others
   (from `nm`).
2. No internal header used across folders: a folder's *_int.h headers
   are included only from that folder (from the compiler's .d dependency
   files).
3. The parts of a folder (SUBLAYERS: its subfolders, each with a README.md
   saying what it holds) in their order: a file of one part includes the
   headers (from the .d files) and uses the functions and data (from `nm`)
   of its own part and of the parts listed for it only.  The headers at the
   top of the folder are its public ones, which every part may include.

The include paths of the Makefile (INCLUDES_*) keep a layer or part from
including the headers of one above it; this checks what they cannot.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import subprocess
import sys

FOLDERS = ["format", "record", "replay", "analysis", "vmtrace"]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The parts of a folder, each with the parts below it that it may use.  A
# folder not listed is one part.  "" is the folder's own top: its headers
# are public to every part, its .c files may use the parts listed for it.
SUBLAYERS = {
    "analysis": {"model": [], "stats": ["model"], "lint": ["model"], "rewrite": ["model"]},
    "replay": {"load": [], "run": ["load"], "report": ["load", "run"], "vm": [],
               "": ["load", "run", "report", "vm"]},
    "record": {"bpf": [], "": ["bpf"]},
}


def part_of(path):
    """(folder, part) of a path inside the source tree; part None if unknown."""
    folder, _, rest = path.partition("/")
    if "/" not in rest:
        return folder, ""
    sub = rest.split("/", 1)[0]
    return folder, sub if sub in SUBLAYERS.get(folder, {}) else None


def may_use(folder, part, other):
    return other == part or other in SUBLAYERS.get(folder, {}).get(part, [])


def rule(folder, part):
    below = SUBLAYERS.get(folder, {}).get(part, [])
    name = f"{folder}/{part}" if part else f"{folder}/'s top"
    return f"{name} may use " + (", ".join(f"{folder}/{b}" for b in below) or "only itself")


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


def built(build, ext):
    """(object file, its source) of the folders' objects, in the build
    directory BUILD/obj/SOURCE-DIR/NAME.EXT; objects whose source is gone
    (moved or deleted since that build) are left out."""
    root = f"{build}/obj/"
    for o in sorted(glob.glob(f"{root}**/*.{ext}", recursive=True)):
        src = o[len(root):-len(ext)] + "c"
        if src.split("/", 1)[0] in FOLDERS and os.path.exists(os.path.join(SRC, src)):
            yield o, src


def objects(build, folder):
    """{source path without .c: (defined, used)} of the folder's objects."""
    return {src[:-2]: symbols(o) for o, src in built(build, "o") if src.startswith(folder + "/")}


def cycles(syms):
    names = sorted(syms)
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


def symbol_uses(folder, syms):
    """Uses of another part's functions or data that its order forbids."""
    bad = []
    owner = {s: n for n in syms for s in syms[n][0]}
    for n in sorted(syms):
        _, part = part_of(n + ".c")
        for s in sorted(syms[n][1]):
            o = owner.get(s)
            if o is None or o == n:
                continue
            _, opart = part_of(o + ".c")
            if part is not None and opart is not None and not may_use(folder, part, opart):
                bad.append(f"{n}.c uses {s} of {o}.c: {rule(folder, part)}")
    return bad


def includes(build):
    """(source, [header...]) of every object of the FOLDERS."""
    for d, src in built(build, "d"):  # (tests reach into everything)
        text = open(d).read().replace("\\\n", " ").split("\n\n", 1)[0]
        deps = text.split(":", 1)[1].split() if ":" in text else []
        yield src, [os.path.normpath(h) for h in deps if h.endswith(".h")]


def include_problems(build):
    bad = []
    for src, headers in includes(build):
        folder, part = part_of(src)
        for h in headers:
            top, hpart = part_of(h)
            if top in FOLDERS and top != folder and h.endswith("_int.h"):
                bad.append(f"{src} includes {h}, internal to its folder")
            elif top == folder and part is not None and hpart not in (None, "") \
                    and not may_use(folder, part, hpart):
                bad.append(f"{src} includes {h}: {rule(folder, part)}")
    return sorted(set(bad))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    problems = []
    for folder in FOLDERS:
        syms = objects(build, folder)
        for comp in cycles(syms):
            problems.append(f"layers: {folder}/: cycle between " + ", ".join(c + ".c" for c in comp))
        problems += [f"layers: {b}" for b in symbol_uses(folder, syms)]
        for n in syms:
            if part_of(n + ".c")[1] is None:
                problems.append(f"layers: {n}.c is in no part of {folder}/ (SUBLAYERS)")
    problems += [f"layers: {b}" for b in include_problems(build)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
