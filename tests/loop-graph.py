#!/usr/bin/env python3
# The loop's layers (issue 25, "one owner for each piece of state"): the
# file-level call graph of libloop.a (A -> B when A.o has an undefined symbol
# that B.o defines, from `nm`) and the #include graph of agent/loop/*.h have
# no circle, except the one between the pod table and its actions
# (podtable.o and actions.o, taken as one node). Prints the graph with -v.
# usage: loop-graph.py BUILD_DIR [-v]
import os
import re
import subprocess
import sys

ALLOWED = {"podtable": "podtable+actions", "actions": "podtable+actions"}


def call_graph(archive):
    out = subprocess.run(["nm", "-A", archive], check=True, capture_output=True, text=True).stdout
    defined, undefined = {}, {}
    for line in out.splitlines():
        # libloop.a:agent.o:0000000000000000 T agent_new, or libloop.a:agent.o:                 U cub_log
        m = re.match(r"^[^:]*:([^:]+)\.o:\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        undefined.setdefault(obj, set())
        if kind == "U":
            undefined[obj].add(sym)
        elif kind.isupper() and kind not in "N":
            defined[sym] = obj
    graph = {obj: set() for obj in undefined}
    for obj, syms in undefined.items():
        for sym in syms:
            to = defined.get(sym)
            if to and to != obj:
                graph[obj].add(to)
    return graph


def include_graph(folder):
    graph = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".h"):
            continue
        node = name[:-2]
        graph.setdefault(node, set())
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                m = re.match(r'^\s*#\s*include\s+"([^"/]+)\.h"', line)
                if m and os.path.exists(os.path.join(folder, m.group(1) + ".h")) and m.group(1) != node:
                    graph[node].add(m.group(1))
    return graph


def merged(graph, alias):
    out = {}
    for a, tos in graph.items():
        na = alias.get(a, a)
        out.setdefault(na, set())
        for b in tos:
            nb = alias.get(b, b)
            if nb != na:
                out[na].add(nb)
            out.setdefault(nb, set())
    return out


def circles(graph):
    """One circle per strongly connected component of more than one node."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
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
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    found = []
    for comp in comps:
        # a shortest circle through the component's first node, for the message
        start, members = comp[0], set(comp)
        prev, queue, path = {start: None}, [start], None
        while queue and not path:
            nxt = []
            for v in queue:
                for w in sorted(graph[v]):
                    if w == start:
                        path = [v]
                        while prev[path[-1]] is not None:
                            path.append(prev[path[-1]])
                        path.reverse()
                        break
                    if w in members and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if path:
                    break
            queue = nxt
        found.append((comp, path + [start]))
    return found


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: loop-graph.py BUILD_DIR [-v]")
    verbose = "-v" in sys.argv[2:]
    rc = 0
    calls = call_graph(os.path.join(sys.argv[1], "libloop.a"))
    includes = include_graph(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent", "loop"))
    for what, graph, alias in (("call", calls, ALLOWED), ("#include", includes, {})):
        if verbose:
            for a in sorted(graph):
                print(f"{what}: {a} -> {', '.join(sorted(graph[a])) or '(nothing)'}")
        for comp, path in circles(merged(graph, alias)):
            print(f"loop-graph: a {what} circle between the loop's files ({', '.join(comp)}): {' -> '.join(path)}")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
