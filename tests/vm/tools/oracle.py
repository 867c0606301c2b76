#!/usr/bin/python3
"""The kubelet oracle's collector and comparer (tests/vm/scenarios/98-oracle.sh).

  oracle.py collect OUT.json KUBE [ENDPOINT]
                                 what the agent running now made of the corpus:
                                 /pods (127.0.0.1:10255), every cgroup file
                                 under kubepods, each container's CRI config
                                 and OCI spec (`KUBE cri-dump`: containerd's
                                 verbose CRI statuses, in one call), the
                                 order containers were created in; IDs, UIDs,
                                 pod IPs, the state directory (ORACLE_ROOT
                                 too, when set) and timestamps normalised
                                 away
  oracle.py settle DEADLINE [PORT [STUCK]]
                                 waits until the agent's /pods (127.0.0.1:
                                 PORT, default 10255) has settled: its pods'
                                 phases and container states the same for
                                 20 s, and none being created (Pending
                                 without container statuses, or waiting in
                                 ContainerCreating/PodInitializing) unless
                                 nothing has changed for STUCK s (default
                                 120: what the agent cannot start); exit 1
                                 at DEADLINE seconds.
                                 No count: a manifest an agent refuses to
                                 read never becomes a pod
  oracle.py images CORPUS_DIR IMAGES_DIR [IMAGE...]
                                 the image archives (IMAGES_DIR/*.tar) that
                                 hold the images the corpus's manifests name
                                 and the IMAGEs (the runtime's sandbox image)
                                 (found by the names in each archive's
                                 index.json or manifest.json), one per line;
                                 exit 1 naming an image no archive holds
  oracle.py cgroup-corpus CORPUS_DIR
                                 the manifests whose pod and QoS cgroups can
                                 differ from a BestEffort pod's, one path per
                                 line, the first batch then late/: those with
                                 a `resources:` or `overhead:` key, and
                                 o01-besteffort, the BestEffort control.
                                 98-oracle runs these in the VM; every other
                                 pod's cgroups are o01's (no resources, no
                                 overhead: BestEffort), which the native
                                 lane's oracle checks of each pod it runs
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


def collect(out, kube, endpoint=None):
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
    dump = json.loads(subprocess.run([kube, "cri-dump"] + ([endpoint] if endpoint else []), check=True, capture_output=True,
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
    if os.environ.get("ORACLE_ROOT"):
        text = text.replace(os.environ["ORACLE_ROOT"], "<agent>")
    for root in ROOTS:
        text = text.replace(root, "<root>")
    text = re.sub(r"10\.88\.\d+\.\d+", "<pod-ip>", text)
    text = re.sub(r"/proc/\d+/ns/", "/proc/<pid>/ns/", text)
    text = re.sub(r"/netns/cni-[0-9a-f-]+", "/netns/cni-<id>", text)
    # a termination message file: <pods>/<uid>/containers/<name>/<8 hex digits> (kubelet's makeUID)
    text = re.sub(r'(/containers/[^/"]+/)[0-9a-f]{8}"', r'\1<id>"', text)
    doc = json.loads(text)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    phase("normalised and written")


def settle(deadline, port="10255", stuck="120"):
    t0 = time.monotonic()
    last, since = None, t0
    while True:
        now = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/pods", timeout=20) as r:
                items = json.load(r).get("items") or []
        except (OSError, ValueError):
            items = None
        if items is not None:
            digest, creating = [], 0
            for p in items:
                st = p.get("status") or {}
                states = []
                for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
                    if (cs.get("restartCount") or 0) > 0:
                        states.append("restarted")
                    else:
                        s = cs.get("state") or {}
                        states.append(next(iter(s), "none"))
                    why = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
                    if why in ("ContainerCreating", "PodInitializing"):
                        creating += 1
                if st.get("phase") == "Pending" and not st.get("containerStatuses"):
                    creating += 1
                digest.append([p["metadata"]["name"], st.get("phase"), states])
            digest.sort()
            if digest != last:
                last, since = digest, now
            elif now - since >= 20 and (creating == 0 or now - since >= int(stuck)):
                print(f"settled: {len(digest)} pods, {creating} being created, the same for "
                      f"{now - since:.0f} s, after {now - t0:.0f} s")
                return 0
        if now - t0 >= deadline:
            print(f"not settled after {deadline} s: "
                  f"{'no answer from /pods' if items is None else json.dumps(last)}")
            return 1
        time.sleep(2)


def archive_names(path):
    """The image names an image archive (docker-archive or OCI layout) holds."""
    import tarfile
    names = set()
    with tarfile.open(path) as t:
        for member in ("index.json", "manifest.json"):
            try:
                f = t.extractfile(member)
            except KeyError:
                continue
            if f is None:
                continue
            doc = json.load(f)
            if isinstance(doc, list):  # docker-archive: [{RepoTags: [...]}]
                for m in doc:
                    names.update(m.get("RepoTags") or [])
            else:
                for m in doc.get("manifests") or []:
                    ann = m.get("annotations") or {}
                    for k in ("io.containerd.image.name", "org.opencontainers.image.ref.name"):
                        if ":" in ann.get(k, "") or "/" in ann.get(k, ""):
                            names.add(ann[k])
    return names


def images(corpus, images_dir, *extra):
    wanted = set(extra)
    for dirpath, _, files in os.walk(corpus):
        for fn in sorted(files):
            if fn.endswith((".yaml", ".yml", ".json")):
                with open(os.path.join(dirpath, fn)) as f:
                    for m in re.finditer(r"""["']?image["']?\s*:\s*["']?([^\s"',}]+)""", f.read()):
                        wanted.add(m.group(1))
    have = {}
    for fn in sorted(os.listdir(images_dir)):
        if fn.endswith(".tar"):
            for name in archive_names(os.path.join(images_dir, fn)):
                have.setdefault(name, os.path.join(images_dir, fn))
                if "/" not in name.split(":")[0]:
                    have.setdefault("docker.io/library/" + name, os.path.join(images_dir, fn))
    missing = sorted(w for w in wanted if w not in have and "docker.io/library/" + w not in have)
    for w in missing:
        print(f"oracle images: {w} (named in {corpus}) is in no archive of {images_dir}", file=sys.stderr)
    for tar in sorted({have.get(w) or have.get("docker.io/library/" + w) for w in wanted} - {None}):
        print(tar)
    return 1 if missing else 0


CGROUP_KEY = re.compile(r"^\s*-?\s*(resources|overhead)\s*:", re.M)


def cgroup_corpus(corpus):
    for sub in ("", "late"):
        d = os.path.join(corpus, sub)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".yaml"):
                continue
            with open(os.path.join(d, fn)) as f:
                text = f.read()
            if fn == "o01-besteffort.yaml" or CGROUP_KEY.search(text):
                print(os.path.join(d, fn))
    return 0


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


def cpu_list(s):
    """A cpuset list ("0-2,5") as a set of CPU numbers."""
    out = set()
    for r in s.split(","):
        a, _, b = r.strip().partition("-")
        if a:
            out.update(range(int(a), int(b or a) + 1))
    return out


def exclusive_cpus(doc):
    """Which pod gets which exclusive CPUs follows the order pods are
    admitted in, and kubelet's order among static pods read at once is not
    fixed: exclusive CPUs are compared by shape, not by number. The running
    cpuset of each container (its cgroup's cpuset.cpus, else its OCI spec's
    linux.resources.cpu.cpus) other than the shared pool (the most common
    one) is "<exclusive: N>", and doc["cpu_shape"] says whether the exclusive
    sets are disjoint from each other and from the pool, and the pool is the
    rest of the CPUs that any container runs on."""
    conts = []
    for e in doc["pods"].values():
        st = e.get("status") or {}
        exited = {cs.get("name") for key in ("initContainerStatuses", "containerStatuses")
                  for cs in st.get(key) or [] if "terminated" in (cs.get("state") or {})}
        for n, c in (e.get("containers") or {}).items():
            if n == "sandbox":
                continue
            cg = (e.get("cgroups") or {}).get(n) or {}
            cpu = ((c.get("oci") or {}).get("linux") or {}).get("resources", {}).get("cpu") or {}
            if n in exited:
                # an exited container holds no CPUs: its spec keeps the cpuset it was created
                # with, which follows the order of admissions (oracle-create-cpuset)
                cpu.pop("cpus", None)
                continue
            cs = cg.get("cpuset.cpus") or cpu.get("cpus")
            if cs:
                conts.append((e, n, cs, cg, cpu))
    if not conts:
        return
    sets = [cs for _, _, cs, _, _ in conts]
    shared = max(set(sets), key=sets.count)
    pool, excl, problems = cpu_list(shared), [], []
    for e, n, cs, cg, cpu in conts:
        if cs == shared:
            continue
        mine = cpu_list(cs)
        if mine & pool:
            problems.append(f"an exclusive set shares CPUs with the pool {shared}")
        for other in excl:
            if mine & other and mine != other:
                problems.append("two exclusive sets overlap")
        if mine not in excl:
            excl.append(mine)
        for holder in (cg, cpu):
            if holder.get("cpuset.cpus") == cs:
                holder["cpuset.cpus"] = f"<exclusive: {len(mine)}>"
            if holder.get("cpus") == cs:
                holder["cpus"] = f"<exclusive: {len(mine)}>"
    every = set().union(*(cpu_list(cs) for cs in sets))
    doc["cpu_shape"] = {"exclusive sets": len(excl), "problems": sorted(set(problems)) or "none",
                        "pool is the rest": "yes" if pool == every - set().union(set(), *excl) else "no"}


def pod_summary(entry):
    """A pod as the rules see it: its phase and reason, then each container's
    waiting reason and message ("Pending ContainerCreating", "Failed
    UnexpectedAdmissionError", "Pending CreateContainerConfigError: host IP
    unknown; ...")."""
    if entry is None:
        return "<absent>"
    st = entry.get("status") or {}
    out = [st.get("phase") or "<none>"]
    if st.get("reason"):
        out.append(st["reason"])
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in st.get(key) or []:
            w = (cs.get("state") or {}).get("waiting")
            if w:
                out.append(w.get("reason", "") + (f": {w['message']}" if w.get("message") else ""))
    return " ".join(out)


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
    names = sorted(set(kdoc["pods"]) | set(cdoc["pods"]), key=len, reverse=True)
    summary = {(who, name): pod_summary(d["pods"].get(name)) for who, d in (("k", kdoc), ("c", cdoc))
               for name in names}
    for path in sorted(set(k) | set(c)):
        kv, cv = k.get(path, "<absent>"), c.get(path, "<absent>")
        if kv == cv:
            continue
        line = f"{path}: kubelet={kv} cubelet={cv}"
        # rules see no pod names: the pod is "*", and what both agents made of it follows the values
        masked, what = path, f"kubelet={kv} cubelet={cv}"
        for name in names:
            if path.startswith(f"pods.{name}."):
                masked = "pods.*." + path[len(name) + 6:]
                what += f" pod: kubelet={summary[('k', name)]} cubelet={summary[('c', name)]}"
                break
        for ident, kind, pre, vre, _ in rows:
            if pre.search(masked) and vre.search(what):
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
    if len(sys.argv) in (4, 5) and sys.argv[1] == "collect":
        collect(*sys.argv[2:])
        return 0
    if len(sys.argv) in (3, 4, 5) and sys.argv[1] == "settle":
        return settle(int(sys.argv[2]), *sys.argv[3:])
    if len(sys.argv) >= 4 and sys.argv[1] == "images":
        return images(*sys.argv[2:])
    if len(sys.argv) == 3 and sys.argv[1] == "cgroup-corpus":
        return cgroup_corpus(sys.argv[2])
    if len(sys.argv) == 6 and sys.argv[1] == "diff":
        return diff(*sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
