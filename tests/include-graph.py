#!/usr/bin/env python3
"""The product's #include graph (issue 42): no circle among its headers (a
header that, through the headers it includes, includes itself), and none
between its folders (folder A's files include B's and B's include A's).
Quoted includes only; system headers are not followed. Prints each circle;
exit 1 when there is one.

    tests/include-graph.py [ROOT]
"""
import os
import re
import sys

TREES = ("agent", "cri", "deviceplugin", "eviction", "proto")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    for tree in TREES:
        for d, _, files in os.walk(os.path.join(root, tree)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        inc = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
        if os.path.exists(os.path.join(root, inc)):
            yield inc


def circles(graph):
    """Tarjan's strongly connected components of more than one node, or
    a node that reaches itself."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    headers, folders = {}, {}
    for path in sources(root):
        for inc in includes(root, path):
            if path.endswith(".h") and inc.endswith(".h"):
                headers.setdefault(path, set()).add(inc)
            a, b = os.path.dirname(path), os.path.dirname(inc)
            if a != b:
                folders.setdefault(a, set()).add(b)
    rc = 0
    for c in circles(headers):
        print("include-graph: headers that include each other: " + " -> ".join(c))
        rc = 1
    for c in circles(folders):
        print("include-graph: folders that include each other's files: " + ", ".join(c))
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
