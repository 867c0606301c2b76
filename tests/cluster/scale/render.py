"""docs/scale.md's tables and plot from bench-scale.py's results.json."""
import json
import os
import subprocess

ROWS = [
    # (label, function of a result -> number or None, format, per node?)
    ("nodes started / Ready", None, None),
    ("time until all Ready (s)", lambda r: r.get("ready_s"), "%.0f"),
    ("API requests/s, all", lambda r: r.get("req_s"), "%.1f"),
    ("API requests/s per node (the nodes' own: system-nodes, system-node-high)",
     lambda r: per(r, r.get("node_req_s")), "%.3f"),
    ("open watches per node", lambda r: per(r, sub(r.get("watches"), r.get("watches_base"))), "%.1f"),
    ("etcd writes/s per node", lambda r: per(r, sub(r.get("etcd_writes_s"), r.get("etcd_writes_s_base"))), "%.3f"),
    ("etcd database (MiB)", lambda r: r.get("etcd_db_mb"), "%.1f"),
    ("API server CPU, % of a core", lambda r: r.get("cpu_apiserver"), "%.1f"),
    ("API server CPU per node over idle, % of a core",
     lambda r: per(r, sub(r.get("cpu_apiserver"), r.get("cpu_apiserver_base"))), "%.3f"),
    ("API server RSS over idle (MiB)", lambda r: sub(r.get("rss_apiserver"), r.get("rss_apiserver_base")), "%.0f"),
    ("etcd CPU, % of a core", lambda r: r.get("cpu_etcd"), "%.1f"),
    ("etcd RSS over idle (MiB)", lambda r: sub(r.get("rss_etcd"), r.get("rss_etcd_base")), "%.0f"),
    ("each node's CPU, % of a core", lambda r: per(r, r.get("cpu_nodes")), "%.3f"),
    ("the fake runtime's CPU per node (cubelet: its own process)", lambda r: per(r, r.get("cpu_fake-cri")), "%.3f"),
    ("each node's private memory (MiB)", lambda r: r.get("node_private_mb"), "%.1f"),
    ("each node's RSS (MiB)", lambda r: r.get("node_rss_mb"), "%.1f"),
    ("Leases late (>15 s) / missed (>40 s)", None, None),
    ("pods (N x 10): time until all ready (s)", lambda r: r.get("pods_ready_s") if r.get("pods_ready") == r.get("pods") else None, "%.0f"),
    ("status writes per pod", lambda r: r.get("status_writes_per_pod"), "%.2f"),
    ("API server CPU for the Deployment, CPU seconds (creation to 10 s after all ready)",
     lambda r: cpu_s(r, "apiserver"), "%.1f"),
    ("the nodes' CPU for it, CPU seconds per node", lambda r: per(r, cpu_s(r, "nodes")), "%.2f"),
    ("the bench's own API requests that timed out (60 s) and were retried", lambda r: r.get("api_timeouts"), "%d"),
    ("time until all pods are gone after the deletion (s)", lambda r: r.get("pods_gone_s") if r.get("pods_left") == 0 else None, "%.0f"),
]


def cpu_s(r, who):
    """CPU seconds of the Deployment's phase (older results: its rate x its length)."""
    if "pods_cpu_s_" + who in r:
        return r["pods_cpu_s_" + who]
    if "pods_cpu_" + who not in r or r.get("pods_ready") != r.get("pods"):
        return None
    return r["pods_cpu_" + who] / 100 * (r["pods_ready_s"] + 10)


def sub(a, b):
    return None if a is None or b is None else a - b


def per(r, v):
    n = r.get("alive") or r.get("started")
    return None if v is None or not n else v / n


def cell(r, row):
    label, f, fmt = row
    if r is None:
        return "—", None
    if label.startswith("nodes started"):
        s = "%d / %s" % (r.get("started", 0), r["ready"] if "ready" in r else "—")
        if r.get("stopped_by"):
            s += " (%s)" % r["stopped_by"]
        if r.get("exited"):
            s += " (%d exited: %s)" % (r["exited"], r.get("exit_reason", ""))
        return s, None
    if label.startswith("Leases"):
        if "lease_late" not in r:
            return "—", None
        return "%d / %d (max age %.0f s)" % (r["lease_late"], r["lease_missed"], r["lease_max_age_s"]), None
    v = f(r)
    if v is None:
        if label.startswith("pods") and "pods_ready" in r:
            return "%d of %d in %.0f s" % (r["pods_ready"], r["pods"], r["pods_ready_s"]), None
        if label.startswith("time until all pods") and "pods_left" in r:
            return "%d left after %.0f s" % (r["pods_left"], r["pods_gone_s"]), None
        return "—", None
    return fmt % v, v


def density(path):
    """One node at each pod count, both kinds: its idle cost."""
    with open(path) as f:
        data = json.load(f)
    by = {r["kind"]: {d["pods"]: d for d in r.get("density", [])} for r in data["results"]}
    counts = sorted({c for v in by.values() for c in v})
    k, c = by.get("kubelet", {}), by.get("cubelet", {})
    out = ["### Pods per node: one hollow node, idle at each count (%d s window)" % data["window_s"], "",
           "| pods | kubelet CPU, % of a core | cubelet CPU | ratio | kubelet private MiB | cubelet private MiB | ratio "
           "| kubelet anonymous MiB | cubelet anonymous MiB "
           "| kubelet API req/s | cubelet API req/s | kubelet status writes/s | cubelet status writes/s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def g(d, n, key, fmt):
        v = d.get(n, {}).get(key)
        return (fmt % v, v) if v is not None else ("—", None)

    def ratio(a, b):
        return "%.2f" % (b / a) if a and b is not None else ""
    for n in counts:
        kc, kcv = g(k, n, "cpu_node", "%.2f")
        cc, ccv = g(c, n, "cpu_node", "%.2f")
        km, kmv = g(k, n, "private_mb", "%.1f")
        cm, cmv = g(c, n, "private_mb", "%.1f")
        out.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, kc, cc, ratio(kcv, ccv), km, cm, ratio(kmv, cmv), g(k, n, "anon_mb", "%.1f")[0],
            g(c, n, "anon_mb", "%.1f")[0], g(k, n, "node_req_s", "%.3f")[0],
            g(c, n, "node_req_s", "%.3f")[0], g(k, n, "status_writes_s", "%.3f")[0], g(c, n, "status_writes_s", "%.3f")[0]))
    out.append("")
    for kind, d in (("kubelet", k), ("cubelet", c)):
        slow = [n for n in counts if n in d and d[n].get("ready_s") is None]
        if slow:
            out.append("%s: the Deployment did not become ready at %s pods." % (kind, ", ".join(map(str, slow))))
    return out


def render(path, doc, plot):
    # a run of the pods per node alone (SCALE_NODES="") wrote density.json only
    src = path if os.path.exists(path) else os.path.join(os.path.dirname(path), "density.json")
    with open(src) as f:
        data = json.load(f)
    res = data["results"] if src == path else []
    ns = sorted({r["n"] for r in res})
    find = {(r["kind"], r["n"]): r for r in res}
    lines = []
    for n in ns:
        k, c = find.get(("kubelet", n)), find.get(("cubelet", n))
        lines.append("### N = %d" % n)
        lines.append("")
        lines.append("| N = %d | kubemark's hollow kubelet | hollow cubelet | cubelet / kubelet |" % n)
        lines.append("|---|---|---|---|")
        for row in ROWS:
            ks, kv = cell(k, row)
            cs, cv = cell(c, row)
            ratio = "%.2f" % (cv / kv) if kv and cv is not None and kv > 0 else ""
            lines.append("| %s | %s | %s | %s |" % (row[0], ks, cs, ratio))
        for r in (k, c):
            if r and r.get("error"):
                lines.append("")
                lines.append("%s at N = %d stopped: `%s`" % (r["kind"], n, r["error"]))
        lines.append("")
    # requests by verb and resource, the largest N both kinds reached
    both = [n for n in ns if "req_by" in find.get(("kubelet", n), {}) and "req_by" in find.get(("cubelet", n), {})]
    if both:
        n = both[-1]
        k, c = find[("kubelet", n)], find[("cubelet", n)]
        keys = sorted(set(k.get("req_by", {})) | set(c.get("req_by", {})),
                      key=lambda x: -(k.get("req_by", {}).get(x, 0) + c.get("req_by", {}).get(x, 0)))
        lines.append("### API requests/s by verb and resource, idle, N = %d (all clients)" % n)
        lines.append("")
        lines.append("| verb resource | kubelet | cubelet |")
        lines.append("|---|---|---|")
        for key in keys[:20]:
            lines.append("| %s | %.3f | %.3f |" % (key, k.get("req_by", {}).get(key, 0), c.get("req_by", {}).get(key, 0)))
        lines.append("")
        lines.append("Open watches over the idle control plane's, by resource, N = %d:" % n)
        lines.append("")
        for r in (k, c):
            wb = ", ".join("%s %d" % (x, v) for x, v in sorted(r.get("watch_by", {}).items(), key=lambda x: -x[1]))
            lines.append("- %s: %s" % (r["kind"], wb or "none"))
        lines.append("")
    dens = os.path.join(os.path.dirname(path), "density.json")
    if os.path.exists(dens):
        lines += density(dens)
    table = "\n".join(lines)
    # the plot: API server CPU against N
    dat = os.path.splitext(plot)[0] + ".dat"
    with open(dat, "w") as f:
        f.write("# N kubelet_apiserver_cpu cubelet_apiserver_cpu (% of a core; idle control plane subtracted)\n")
        for n in ns:
            vals = []
            for kind in ("kubelet", "cubelet"):
                r = find.get((kind, n))
                v = sub(r.get("cpu_apiserver"), r.get("cpu_apiserver_base")) if r else None
                vals.append("%.2f" % v if v is not None and r.get("alive") else "NaN")
            f.write("%d %s\n" % (n, " ".join(vals)))
    gp = """set terminal pngcairo size 800,500
set output '%s'
set title 'API server CPU over the idle control plane, idle hollow nodes'
set xlabel 'hollow nodes (N)'
set ylabel '%% of one core'
set logscale x
set key left top
set grid
plot '%s' using 1:2 with linespoints lw 2 title 'kubemark hollow kubelet', \\
     '%s' using 1:3 with linespoints lw 2 title 'hollow cubelet'
""" % (plot, dat, dat)
    try:
        if ns:  # nothing to plot without hollow nodes
            subprocess.run(["gnuplot"], input=gp, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("render: no plot (%s): gnuplot-nox is in make deps" % e)
    os.unlink(dat)
    begin, end = "<!-- bench-scale: begin -->", "<!-- bench-scale: end -->"
    block = "%s\n%s\n\n%s\n%s" % (begin, "Machine: %s. Window: %d s idle; Deployment: %d pods per node." % (
        data["machine"], data["window_s"], data["pods_per_node"]), table, end)
    if os.path.exists(doc) and begin in open(doc).read():
        text = open(doc).read()
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = "# Scale\n\n" + block + "\n"
    with open(doc, "w") as f:
        f.write(text)
    print("render: %s, %s" % (doc, plot))
