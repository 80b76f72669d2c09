#!/usr/bin/env python3
"""make lint: the layers of src/ (docs/hacking.md#layers), read from the
#include lines.  Fails on an include of a folder of the same or a higher
layer (other than one's own), and on any cycle of includes between files,
counting a .c and its .h as one unit.

    python3 scripts/check-layers.py [SRC]     (SRC defaults to src)
"""
import os
import re
import sys

# Bottom to top; a folder may include only its own files and folders of
# lower layers.  pg and math are both at the bottom and do not include
# each other.
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


def upward(graph):
    problems = []
    for unit, deps in sorted(graph.items()):
        mine = folder(unit)
        if mine not in RANK:
            problems.append(f"{unit}: folder '{mine}' has no layer (scripts/check-layers.py)")
            continue
        for dep in sorted(deps):
            theirs = folder(dep)
            if theirs == mine:
                continue
            if theirs not in RANK or RANK[theirs] >= RANK[mine]:
                problems.append(f"{unit} includes {dep}.h: '{theirs}' is not below '{mine}'")
    return problems


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
    return [f"include cycle: {' <-> '.join(c)}" for c in found]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    graph = units(src)
    problems = upward(graph) + cycles(graph)
    for p in problems:
        print(f"check-layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
