#!/usr/bin/env python3
"""The product's #include graph (issue 42): no circle among its headers (a
header that, through the headers it includes, includes itself), and none
between its folders (folder A's files include B's and B's include A's).
Quoted includes only; system headers are not followed. Prints each circle;
exit 1 when there is one.

    tests/include-graph.py [ROOT]
"""
import importlib.util
import os
import re
import sys

# the strongly connected components and a shortest circle through each:
# loop-graph.py's, for the loop's own files
_spec = importlib.util.spec_from_file_location(
    "loop_graph", os.path.join(os.path.dirname(os.path.abspath(__file__)), "loop-graph.py"))
loop_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loop_graph)

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
    for what, graph in (("headers that include each other", headers),
                        ("folders that include each other's files", folders)):
        for comp, path in loop_graph.circles(loop_graph.merged(graph, {})):
            print(f"include-graph: {what} ({', '.join(comp)}): {' -> '.join(path)}")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
