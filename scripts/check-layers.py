#!/usr/bin/env python3
"""make lint: the layers of src/ (docs/hacking.md#layers), read from the
#include lines and from the built objects' symbols.

Includes: fails on an include of a folder of the same or a higher layer
(other than one's own), and on any cycle of includes between files, counting
a .c and its .h as one unit.

Calls: `nm` of every object gives the symbols each file defines and those it
needs from elsewhere, so the functions it calls and the variables it uses in
other files.  Fails on a call into a folder of the same or a higher layer
(other than one's own) and on any cycle of calls between folders.  A call
through a pointer (a PolicyOps, a hook the module entry sets) has no symbol:
that is how a lower layer reaches up.  The objects must be built and fresh
(`make lint` builds them first); with no object at all the call check is
skipped, saying so.

    python3 scripts/check-layers.py [SRC]     (SRC defaults to src)
"""
import os
import re
import subprocess
import sys

# Bottom to top; a folder may include and call only its own files and
# folders of lower layers.  pg and math are both at the bottom and do not
# include or call each other.
LAYERS = [
    {"pg", "math"},          # PostgreSQL plumbing; pure numerics
    {"model"},               # the domain: settings, states, contexts, the registry
    {"policy"},              # the policies and what they share
    {"learning"},            # folding rewards, checkpoints, clocks
    {"routing"},             # loading selectors, scoring, deciding
    {"cascade", "probe", "eval"},
    {""},                    # src/model_select.c, the module entry
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def units(src):
    """{unit: set of included units}; a unit is folder/basename."""
    graph = {}
    for folder, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(folder, name), src)
            unit = os.path.splitext(rel)[0]
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            deps = graph.setdefault(unit, set())
            for inc in INCLUDE.findall(text):
                if os.path.exists(os.path.join(src, inc)):
                    deps.add(os.path.splitext(inc)[0])
    return graph


def folder(unit):
    return os.path.dirname(unit)


def below(mine, theirs):
    """May a file of folder mine include or call one of folder theirs?"""
    return theirs == mine or (theirs in RANK and RANK[theirs] < RANK[mine])


def upward(graph):
    problems = []
    for unit, deps in sorted(graph.items()):
        mine = folder(unit)
        if mine not in RANK:
            problems.append(f"{unit}: folder '{mine}' has no layer (scripts/check-layers.py)")
            continue
        for dep in sorted(deps):
            if not below(mine, folder(dep)):
                problems.append(f"{unit} includes {dep}.h: '{folder(dep)}' is not below '{mine}'")
    return problems


def symbols(src):
    """({unit: needed symbols}, {symbol: (defining unit, verb)}) from nm of
    the objects of src/, or None if none is built; exits on an object that
    is missing or older than its source."""
    sources = sorted(os.path.join(d, f) for d, _, files in os.walk(src) for f in files if f.endswith(".c"))
    objects = [c[:-2] + ".o" for c in sources]
    missing = [o for o in objects if not os.path.exists(o)]
    if len(missing) == len(objects):
        return None
    stale = missing + [o for c, o in zip(sources, objects)
                       if o not in missing and os.path.getmtime(o) < os.path.getmtime(c)]
    if stale:
        sys.exit(f"check-layers: {', '.join(stale)} missing or older than its source: run make first")
    out = subprocess.run(["nm", "-A", "-P"] + objects, check=True,
                         capture_output=True, text=True).stdout
    needs, defines = {}, {}
    for line in out.splitlines():
        path, sym, kind = line.split()[:3]
        unit = os.path.splitext(os.path.relpath(path.rstrip(":"), src))[0]
        if kind == "U":
            needs.setdefault(unit, set()).add(sym)
        elif kind.isupper():
            defines[sym] = (unit, "calls" if kind == "T" else "uses")
    return needs, defines


def calls(src):
    """Problems of the calls between files: upward calls, folder cycles."""
    found = symbols(src)
    if found is None:
        print(f"check-layers: no object built under {src}: calls not checked (run make first)",
              file=sys.stderr)
        return []
    needs, defines = found
    problems, folders = [], {}
    for unit, syms in sorted(needs.items()):
        mine = folder(unit)
        for sym in sorted(syms):
            dep, verb = defines.get(sym, (unit, ""))
            if folder(dep) == mine:
                continue
            folders.setdefault(mine or "src", set()).add(folder(dep) or "src")
            if mine in RANK and not below(mine, folder(dep)):
                problems.append(f"{unit} {verb} {dep}'s {sym}: '{folder(dep)}' is not below '{mine}'")
    return problems + [f"call cycle between folders: {' <-> '.join(c)}" for c in cycles(folders)]


def cycles(graph):
    """One cycle per strongly connected component of more than one unit."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    graph = units(src)
    problems = (upward(graph) + [f"include cycle: {' <-> '.join(c)}" for c in cycles(graph)]
                + calls(src))
    for p in problems:
        print(f"check-layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
