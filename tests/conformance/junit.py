#!/usr/bin/python3
"""junit.py JUNIT.xml: each test case of ginkgo's junit report (e2e.test --ginkgo.junit-report)
as "NAME<TAB>passed|failed|skipped<TAB>SECONDS", in the report's order; the suite's own nodes
([SynchronizedBeforeSuite] and the like) only when they failed. Standard library only.

junit.py --table KUBELET.tsv CUBELET.tsv OUT.tsv: the two agents' results side by side, as a
Markdown table on stdout (and tab-separated in OUT.tsv), with the counts: each the results.tsv of a
run, or several comma-separated (the parallel part's and the serial part's); tests neither agent
ran are left out.

junit.py --shard I/N JUNIT.xml: a ginkgo focus regex naming the I-th of every N test cases of a
dry run's report (1-based), in the report's order.

junit.py --list FILE: a ginkgo focus regex of FILE's lines (each a part of a test's name, matched
literally; blank lines and "#" comments skipped).

junit.py --why JUNIT.xml NAME: why the test case NAME failed, in a few lines: the failure's first
lines, the events the framework dumped for its namespace (reason: message), each pod's container
restart counts, and "namespace: NS" (the test's namespace, to find the agent's lines)."""
import re
import sys
import xml.etree.ElementTree as ET


def shard(spec, path):
    i, n = (int(x) for x in spec.split("/"))
    if not 1 <= i <= n:
        sys.exit(f"junit.py: shard {spec}: want I/N with 1 <= I <= N")
    names = [" ".join(c.get("name", "").split()) for c in ET.parse(path).getroot().iter("testcase")]
    names = [x for x in names if not x.startswith("[SynchronizedBeforeSuite") and
             not x.startswith("[SynchronizedAfterSuite") and not x.startswith("[ReportAfterSuite")]
    mine = names[i - 1::n]
    if not mine:
        sys.exit(f"junit.py: shard {spec}: no tests")
    print("|".join(re.escape(re.sub(r"^\[It\] ", "", x)) for x in mine))
    return 0


def focus_list(path):
    with open(path) as f:
        parts = [x.strip() for x in f if x.strip() and not x.lstrip().startswith("#")]
    if not parts:
        sys.exit(f"junit.py: {path}: no test names")
    print("|".join(re.escape(x) for x in parts))
    return 0


def why(path, name):
    for case in ET.parse(path).getroot().iter("testcase"):
        if " ".join(case.get("name", "").split()) != name:
            continue
        f = case.find("failure")
        if f is None:
            f = case.find("error")
        text = (f.get("message") or f.text or "") if f is not None else ""
        for line in [x.rstrip() for x in text.splitlines() if x.strip()][:4]:
            print(line[:300])
        err = case.find("system-err")
        err = err.text or "" if err is not None else ""
        m = re.search(r'Destroying namespace "([^"]+)"', err)
        for line in err.splitlines():
            e = re.search(r"event for ([^:]+): \{[^}]*\} (\w+): (.*)", line)
            if e:
                print(f"event {e.group(1)}: {e.group(2)}: {e.group(3)[:240]}")
            c = re.search(r"dump\.go:\d+\]\s+(Container .* restart count \d+)", line)
            if c:
                print(c.group(1))
        if m:
            print(f"namespace: {m.group(1)}")
        return 0
    sys.exit(f"junit.py: {path}: no test case '{name}'")


def read(paths):
    """results.tsv files, comma-separated (the parallel run's and the serial
    one's): a test skipped in one keeps its result from another"""
    out = {}
    for path in paths.split(","):
        try:
            with open(path) as f:
                for line in f:
                    name, result, secs = line.rstrip("\n").split("\t")
                    if result == "skipped" and name in out:
                        continue
                    out[name] = (result, secs)
        except OSError:
            pass
    return out


def table(kpath, cpath, tsv):
    k, c = read(kpath), read(cpath)
    ran = ("passed", "failed")
    names = [x for x in k if k[x][0] in ran] + [x for x in c if x not in k and c[x][0] in ran]
    both = {"passed": 0}
    counts = {"kubelet": {}, "cubelet": {}}
    print("| test | kubelet 1.34.4 | cubelet |")
    print("|---|---|---|")
    with open(tsv, "w") as f:
        for name in sorted(names):
            kr, cr = k.get(name, ("not run", ""))[0], c.get(name, ("not run", ""))[0]
            counts["kubelet"][kr] = counts["kubelet"].get(kr, 0) + 1
            counts["cubelet"][cr] = counts["cubelet"].get(cr, 0) + 1
            if kr == "passed" and cr == "passed":
                both["passed"] += 1
            mark = " **(kubelet passes)**" if kr == "passed" and cr != "passed" else ""
            print(f"| {name.replace('|', '&#124;')} | {kr} | {cr}{mark} |")
            f.write(f"{name}\t{kr}\t{cr}\n")
    print()
    for agent in ("kubelet", "cubelet"):
        print(f"{agent}: " + ", ".join(f"{v} {r}" for r, v in sorted(counts[agent].items())))
    print(f"passed by both: {both['passed']} of {len(names)}; passed by kubelet only: "
          f"{sum(1 for x in names if k.get(x, ('',))[0] == 'passed' and c.get(x, ('',))[0] != 'passed')}")
    return 0


def main(path, *rest):
    if path == "--shard":
        return shard(*rest)
    if path == "--table":
        return table(*rest)
    if path == "--list":
        return focus_list(*rest)
    if path == "--why":
        return why(*rest)
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = " ".join(case.get("name", "").split())
        if case.find("skipped") is not None:
            result = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            result = "failed"
        else:
            result = "passed"
        if name.startswith("[") and name.split("]")[0] in (
                "[SynchronizedBeforeSuite", "[SynchronizedAfterSuite", "[BeforeSuite", "[AfterSuite",
                "[ReportBeforeSuite", "[ReportAfterSuite", "[DeferCleanup (Suite)") and result != "failed":
            continue
        print(f"{name}\t{result}\t{float(case.get('time', '0')):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
