#!/usr/bin/python3
"""The kubelet oracle's collector and comparer (tests/vm/scenarios/98-oracle.sh).

  oracle.py collect OUT.json KUBE
                                 what the agent running now made of the corpus:
                                 /pods (127.0.0.1:10255), every cgroup file
                                 under kubepods, each container's CRI config
                                 and OCI spec (`KUBE cri-dump`: containerd's
                                 verbose CRI statuses, in one call), the
                                 order containers were created in; IDs, UIDs,
                                 pod IPs, the state directory and timestamps
                                 normalised away
  oracle.py diff KUBELET.json CUBELET.json ACCEPTED.tsv DOC.md
                                 every path whose value differs, each either
                                 accepted (a line of ACCEPTED.tsv: ID, KIND,
                                 path regex, value regex, reason) or not;
                                 prints "accepted ID PATH: kubelet=… cubelet=…",
                                 "todo ID …" and "unexplained …" lines, then
                                 "items N accepted N todo N unexplained N";
                                 exit 1 when anything is unexplained or a
                                 deliberate ID has no row in DOC.md

Only the Python standard library: it runs in the VM guest (/usr/bin/python3).
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

CG = "/sys/fs/cgroup"
CG_FILES = ("cpu.max", "cpu.weight", "cpu.idle", "memory.max", "memory.min", "memory.low",
            "memory.high", "memory.swap.max", "memory.oom.group", "pids.max", "cpuset.cpus",
            "cpuset.mems", "hugetlb.2MB.max", "hugetlb.1GB.max")
# state directories of the two agents: the same place in the comparison
ROOTS = ("/var/lib/kubelet", "/var/lib/cubelet")
# where an ID or a UID can be: a run of hex digits, dashes and underscores
HEXRUN = re.compile(r"[0-9a-f_-]{16,}")
# keys whose values are times or IDs: never compared
DROP = {"startedAt", "finishedAt", "lastTransitionTime", "lastProbeTime", "creationTimestamp",
        "containerID", "imageID", "podIP", "podIPs", "resourceVersion", "uid", "generation",
        "kubernetes.io/config.seen", "kubernetes.io/config.hash", "attempt", "log_path",
        "NetNSPath", "sandbox_id", "startTime"}


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def collect(out, kube):
    t0 = time.monotonic()

    def phase(what):  # the time each part took, on stderr
        print(f"collect: {what} at {time.monotonic() - t0:.1f} s", file=sys.stderr)
    node = os.uname().nodename.lower()
    with urllib.request.urlopen("http://127.0.0.1:10255/pods", timeout=30) as r:
        podlist = json.load(r)
    suffix = "-" + node

    def short(name):
        return name[:-len(suffix)] if name.endswith(suffix) else name

    subst = []  # (literal, replacement), longest first
    pods = {}
    for p in podlist.get("items") or []:
        name = short(p["metadata"]["name"])
        uid = p["metadata"].get("uid", "")
        if uid:
            subst.append((uid, "<uid>"))
            subst.append((uid.replace("-", "_"), "<uid>"))
        pods[name] = {"status": p.get("status", {}), "containers": {}, "cgroups": {}}
    # containers: the newest attempt of each, the sandbox as "sandbox"
    created = {}
    ids = {}
    phase("/pods read")
    dump = json.loads(subprocess.run([kube, "cri-dump"], check=True, capture_output=True,
                                     text=True).stdout)
    phase(f"{len(dump.get('items') or [])} sandboxes and containers from cri-dump")
    sandbox_pod = {}
    for it in dump.get("items") or []:
        labels = it.get("labels") or {}
        cid, info = it["id"], it.get("info") or {}
        cfg = info.get("config") or {}
        if it.get("kind") == "sandbox":
            pod = labels.get("io.kubernetes.pod.name") or labels.get("cubelet.io/pod-name") or \
                (cfg.get("metadata") or {}).get("name", "?")
            sandbox_pod[cid] = pod
            cname = "sandbox"
            subst.append((cid, "<sandbox-id>"))
        else:
            pod = labels.get("io.kubernetes.pod.name") or labels.get("cubelet.io/pod-name") or \
                sandbox_pod.get(info.get("sandboxID"), "?")
            cname = labels.get("io.kubernetes.container.name") or labels.get("cubelet.io/container-name") or \
                (cfg.get("metadata") or {}).get("name", "?")
            subst.append((cid, "<id>"))
        pod = short(pod)
        ids[cid] = (pod, cname)
        attempt = (cfg.get("metadata") or {}).get("attempt", 0)
        entry = pods.setdefault(pod, {"status": {}, "containers": {}, "cgroups": {}})
        old = entry["containers"].get(cname)
        if old is None or attempt >= old["_attempt"]:
            entry["containers"][cname] = {"_attempt": attempt, "cri": cfg, "oci": info.get("runtimeSpec") or {}}
        created.setdefault(pod, []).append((it.get("createdAt", 0), cname))
    for pod, lst in created.items():
        order = []
        for _, cname in sorted(lst):
            if cname not in order:
                order.append(cname)
        pods[pod]["created_order"] = " ".join(order)
    for entry in pods.values():
        for c in entry["containers"].values():
            c.pop("_attempt", None)
    # cgroups: kubepods, the QoS groups, each pod's, each container's
    uid_pod = {}
    for p in podlist.get("items") or []:
        uid_pod[p["metadata"].get("uid", "").replace("-", "_")] = short(p["metadata"]["name"])
        uid_pod[p["metadata"].get("uid", "")] = short(p["metadata"]["name"])
    node_cg = {}
    base = os.path.join(CG, "kubepods")
    for dirpath, dirnames, _ in os.walk(base):
        rel = os.path.relpath(dirpath, CG)
        leaf = os.path.basename(dirpath)
        vals = {f: read(os.path.join(dirpath, f)) for f in CG_FILES}
        vals = {k: v for k, v in vals.items() if v is not None}
        m = re.match(r"pod(.*)$", leaf)
        if leaf in ids:
            pod, cname = ids[leaf]
            pods.setdefault(pod, {"status": {}, "containers": {}, "cgroups": {}})["cgroups"][cname] = vals
        elif m and m.group(1) in uid_pod:
            pods[uid_pod[m.group(1)]]["cgroups"]["pod"] = vals
            pods[uid_pod[m.group(1)]]["cgroup_parent"] = os.path.dirname(rel)
        elif rel.count("/") <= 1:
            node_cg[rel] = vals  # kubepods and its QoS groups
        # else: a container's made or removed since the listing (a restart)
    for entry in pods.values():
        # a cycling container's own config, cgroup and creation order are
        # those of whichever attempt exists at the moment, or none
        for name in normalise_status(entry.get("status") or {}):
            entry["containers"].pop(name, None)
            entry["cgroups"].pop(name, None)
            entry.pop("created_order", None)
    phase("cgroups read")
    doc = {"pods": pods, "node_cgroups": node_cg}
    text = json.dumps(doc, sort_keys=True)
    # IDs and UIDs in one pass over the text (a replace per literal, ~400 of
    # them over 2 MB, took most of a minute under emulation); any other
    # literal one by one
    table = {lit: rep for lit, rep in subst if lit}
    text = replace_ids(text, table)
    for root in ROOTS:
        text = text.replace(root, "<root>")
    text = re.sub(r"10\.88\.\d+\.\d+", "<pod-ip>", text)
    text = re.sub(r"/proc/\d+/ns/", "/proc/<pid>/ns/", text)
    text = re.sub(r"/netns/cni-[0-9a-f-]+", "/netns/cni-<id>", text)
    doc = json.loads(text)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    phase("normalised and written")


def replace_ids(text, table):
    """Each key of table (IDs, UIDs: hex digits, dashes, underscores) found
    in text replaced by its value, longest first, in one pass over the hex
    runs of text; any other key by str.replace."""
    lengths = sorted({len(k) for k in table if HEXRUN.fullmatch(k)}, reverse=True)

    def run(m):
        r, out, i = m.group(0), [], 0
        while i < len(r):
            for n in lengths:
                if r[i:i + n] in table:
                    out.append(table[r[i:i + n]])
                    i += n
                    break
            else:
                out.append(r[i])
                i += 1
        return "".join(out)

    text = HEXRUN.sub(run, text)
    for lit in sorted((k for k in table if not HEXRUN.fullmatch(k)), key=len, reverse=True):
        text = text.replace(lit, table[lit])
    return text


def normalise_status(st):
    """What depends on when it was looked at: a container that restarted is
    "cycling" (running, waiting in CrashLoopBackOff or just terminated, by the
    moment) with a restart count of 1 or "2+", and its pod's readiness goes
    with it. Its last termination is the newest one either agent shows: the
    current state's when it is terminated, else lastState's (kubelet, with a
    terminated attempt, shows the one before only until its container GC
    removes it: run of stop 35's CI, o60 lastState kubelet=<absent>).
    Returns the names of the cycling containers."""
    cycling = set()
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in st.get(key) or []:
            n = cs.get("restartCount") or 0
            if n == "2+" or (isinstance(n, int) and n >= 1):
                cycling.add(cs.get("name"))
                cs["restartCount"] = 1 if n == 1 else "2+"  # (collected twice: the same)
                term = ((cs.get("state") or {}).get("terminated")
                        or (cs.get("lastState") or {}).get("terminated"))
                cs["lastState"] = {"terminated": term} if term else {}
                cs["state"] = {"cycling": {}}
                cs.pop("ready", None)
                cs.pop("started", None)
    if cycling:
        for c in st.get("conditions") or []:
            if c.get("type") in ("Ready", "ContainersReady"):
                for k in ("status", "reason", "message"):
                    c.pop(k, None)
    return cycling


def flatten(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items():
            if k in DROP:
                continue
            flatten(x, f"{path}.{k}" if path else k, out)
    elif isinstance(v, list):
        # lists of named things by name, the rest by index
        keyed = ("destination", "container_path", "name", "key", "type")
        if v and all(isinstance(x, dict) and any(k in x for k in keyed) for x in v):
            for x in v:
                key = next(x[k] for k in keyed if k in x)
                flatten(x, f"{path}[{key}]", out)
        elif v and all(isinstance(x, (str, int, float)) for x in v):
            out[path] = json.dumps(sorted(v, key=str) if path.endswith(("env", "capabilities.bounding",
                                   "capabilities.effective", "capabilities.permitted", "add_capabilities",
                                   "drop_capabilities", "supplemental_groups", "additionalGids"))
                                   else v)
        else:
            for i, x in enumerate(v):
                flatten(x, f"{path}[{i}]", out)
    else:
        out[path] = json.dumps(v)


def load_accepted(path):
    rows = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                sys.exit(f"{path}: want 5 tab-separated fields: {line!r}")
            ident, kind, pre, vre, reason = parts
            if kind not in ("deliberate", "todo"):
                sys.exit(f"{path}: {ident}: kind must be deliberate or todo, not {kind!r}")
            rows.append((ident, kind, re.compile(pre), re.compile(vre, re.S), reason))
    return rows


def cycling_names(entry):
    st = entry.get("status") or {}
    return {cs.get("name") for key in ("initContainerStatuses", "containerStatuses")
            for cs in st.get(key) or [] if "cycling" in (cs.get("state") or {})}


def unstable(kdoc, cdoc):
    """A container that restarted under one agent only (a runtime race such
    as runc's "namespace path: lstat /proc/0/ns/ipc"): its status, config,
    cgroup and the pod's readiness left out of both, named on a note line."""
    notes = []
    for name in sorted(set(kdoc["pods"]) & set(cdoc["pods"])):
        ke, ce = kdoc["pods"][name], cdoc["pods"][name]
        for c in sorted((cycling_names(ke) ^ cycling_names(ce)) - {None}):
            notes.append(f"unstable {name}/{c}: restarted under "
                         f"{'kubelet' if c in cycling_names(ke) else 'cubelet'} only; not compared")
            for e in (ke, ce):
                e.get("containers", {}).pop(c, None)
                e.get("cgroups", {}).pop(c, None)
                e.pop("created_order", None)
                st = e.get("status") or {}
                for key in ("initContainerStatuses", "containerStatuses"):
                    for cs in st.get(key) or []:
                        if cs.get("name") == c:
                            for f in ("state", "lastState", "restartCount", "ready", "started"):
                                cs.pop(f, None)
                for cond in st.get("conditions") or []:
                    if cond.get("type") in ("Ready", "ContainersReady"):
                        for f in ("status", "reason", "message"):
                            cond.pop(f, None)
    return notes


def exclusive_cpus(doc):
    """Which pod gets which exclusive CPUs follows the order pods are
    admitted in, and kubelet's order among static pods read at once is not
    fixed: a container's cpuset other than the shared pool (the most common
    one) is compared as its size, the exclusive sets as one sorted list."""
    conts = [(e, name) for e in doc["pods"].values() for name in (e.get("cgroups") or {})
             if name not in ("pod", "sandbox")]
    sets = [e["cgroups"][n].get("cpuset.cpus") for e, n in conts]
    sets = [x for x in sets if x]
    if not sets:
        return
    shared = max(set(sets), key=sets.count)
    excl = []
    for e, n in conts:
        cs = e["cgroups"][n].get("cpuset.cpus")
        if not cs or cs == shared:
            continue
        excl.append(cs)
        size = sum(int(b) - int(a) + 1 if "-" in r else 1
                   for r in cs.split(",") for a, _, b in [r.partition("-")])
        e["cgroups"][n]["cpuset.cpus"] = f"<exclusive: {size}>"
        cpu = (((e.get("containers") or {}).get(n) or {}).get("oci") or {}).get("linux", {}).get("resources", {}).get("cpu")
        if cpu and cpu.get("cpus") == cs:
            cpu["cpus"] = f"<exclusive: {size}>"
    doc["exclusive_cpusets"] = " ".join(sorted(excl))


def diff(kpath, cpath, accepted_path, doc_path):
    with open(kpath) as f:
        kdoc = json.load(f)
    with open(cpath) as f:
        cdoc = json.load(f)
    # the unstable containers out first: one restarted under one agent
    # only may hold no CPUs at the time of the collect (run or17: kubelet's
    # o09 in a restart, its exclusive CPU missing from kubelet's list)
    notes = unstable(kdoc, cdoc)
    exclusive_cpus(kdoc)
    exclusive_cpus(cdoc)
    for line in notes:
        print(line)
    k, c = {}, {}
    flatten(kdoc, "", k)
    flatten(cdoc, "", c)
    rows = load_accepted(accepted_path)
    with open(doc_path) as f:
        doc = f.read()
    counts = {"accepted": 0, "todo": 0, "unexplained": 0}
    used = set()
    for path in sorted(set(k) | set(c)):
        kv, cv = k.get(path, "<absent>"), c.get(path, "<absent>")
        if kv == cv:
            continue
        line = f"{path}: kubelet={kv} cubelet={cv}"
        for ident, kind, pre, vre, _ in rows:
            if pre.search(path) and vre.search(f"kubelet={kv} cubelet={cv}"):
                what = "accepted" if kind == "deliberate" else "todo"
                counts[what] += 1
                used.add(ident)
                print(f"{what} {ident} {line}")
                break
        else:
            counts["unexplained"] += 1
            print(f"unexplained {line}")
    bad = 0
    for ident, kind, _, _, _ in rows:
        if kind == "deliberate" and f"`{ident}`" not in doc:
            print(f"undocumented {ident}: no row with `{ident}` in {doc_path}")
            bad = 1
    print(f"items {len(set(k) | set(c))} accepted {counts['accepted']} todo {counts['todo']} "
          f"unexplained {counts['unexplained']} unstable {len(notes)} rules-used {len(used)}/{len(rows)}")
    return 1 if counts["unexplained"] or bad else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "collect":
        collect(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) == 6 and sys.argv[1] == "diff":
        return diff(*sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
