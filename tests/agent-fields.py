#!/usr/bin/env python3
# struct Agent's readable part (issue 42): the leaf fields another file of
# the loop can read, at most MAX. A part whose struct is defined in
# agent-internal.h counts by its fields (a pointer to one too: the
# owner's view); an opaque part (a pointer to a struct defined in its
# owner's .c) and a type from another folder count as one.
# usage: agent-fields.py [HEADER] [-v]
import re
import sys

MAX = 30


def count(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    structs = {m.group(1): m.group(2) for m in re.finditer(r"typedef struct (\w+) \{(.*?)\n\} \1;", src, re.S)}
    agent = re.search(r"struct Agent \{(.*?)\n\};", src, re.S).group(1)

    def leaves(body):
        n = 0
        # an array of an anonymous struct is one field
        body = re.sub(r"struct \{[^}]*\} *(\w+)\[\w+\];", lambda m: "ANON " + m.group(1) + ";", body)
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            typ = decl.split()[0]
            names = decl.split(",")
            n += leaves(structs[typ]) * len(names) if typ in structs and "*" not in decl else len(names)
        return n

    parts = {}
    for decl in agent.split(";"):
        decl = decl.strip()
        if decl:
            typ, name = decl.split()[0], decl.split()[-1].lstrip("*")
            parts[name] = leaves(structs[typ]) if typ in structs else 1
    return parts


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    path = args[0] if args else "agent/loop/agent-internal.h"
    with open(path, encoding="utf-8") as f:
        parts = count(f.read())
    total = sum(parts.values())
    if "-v" in sys.argv:
        for name, n in parts.items():
            print(f"{name}: {n}")
    if "-v" in sys.argv or total > MAX:
        print(f"struct Agent: {total} readable fields (at most {MAX})")
    return 0 if total <= MAX else 1


if __name__ == "__main__":
    sys.exit(main())
