#!/usr/bin/python3
"""make bench-scale: what N nodes cost the control plane and themselves.

For each kind (cubelet, kubelet) and each N, alone against a fresh control
plane (tests/cluster/control-plane.sh) in the caller's network namespace:

  1. the idle control plane measured (the baseline every figure is taken from);
  2. N hollow nodes started: cubelet -- the real binary, each on its own
     socket of one fake-CRI process (`hollow fake-cri`: kubemark's own fake
     remote runtime), cgroupsPerQOS: false -- or kubelet -- kubemark's hollow
     node (`hollow kubemark --morph=kubelet`: kubelet's code on the same fake
     runtime, in its process); each with its own client certificate
     (node-certs.sh); fewer when the machine's available memory falls under
     the floor (said in the results);
  3. once all are Ready and have settled, a window of WINDOW seconds: API
     requests by verb and resource (apiserver_request_total), the nodes' own
     requests (the system-nodes and system-node-high flow schemas), open
     watches, etcd puts and deletes and its database size, the API server's
     and etcd's CPU and memory, each node's CPU and private memory, and the
     Leases' renewals (sampled every 5 s: late past 15 s, missed past 40 s);
  4. a Deployment of N x PODS pause pods: the time until all are ready, the
     pods' status writes per pod, then the time until all are gone after its
     deletion.

Results: OUT/results.json (one record per kind and N, appended as each run
ends) and the logs of each run in OUT/KIND-N/. `render` turns results.json
into docs/scale.md's tables and the plot (gnuplot).

  bench-scale.py run --build BUILD --out OUT [--kinds cubelet,kubelet]
                 [--nodes 10,100] [--window 60] [--pods 10] [--mem-floor 3072]
  bench-scale.py render OUT/results.json DOC.md PLOT.png
"""
import argparse
import calendar
import glob
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TICK = os.sysconf("SC_CLK_TCK")
NS = "scale"


def log(msg):
    print("bench-scale: %s" % msg, flush=True)


# ---- the control plane's HTTP APIs ------------------------------------------------------
class Api:
    def __init__(self, pki):
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    timeouts = 0  # the bench's own requests that timed out (retried): an API server past its limit

    def req(self, method, path, body=None, timeout=60):
        for attempt in range(5):
            try:
                return self.req_once(method, path, body, timeout)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                if isinstance(e, urllib.error.HTTPError) or attempt == 4:
                    raise
                Api.timeouts += 1
                time.sleep(5)

    def req_once(self, method, path, body, timeout):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request("https://127.0.0.1:6443" + path, data=data, method=method)
        if data is not None:
            r.add_header("Content-Type", "application/merge-patch+json" if method == "PATCH" else "application/json")
        with urllib.request.urlopen(r, context=self.ctx, timeout=timeout) as f:
            raw = f.read()
        return raw if path.startswith("/metrics") else json.loads(raw)

    def get(self, path):
        return self.req("GET", path)


def prom(text):
    """Prometheus text format -> [(name, {label: value}, float)]."""
    out = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        head, _, val = line.rpartition(" ")
        name, labels = head, {}
        if "{" in head:
            name, rest = head.split("{", 1)
            for part in rest.rstrip("}").split('",'):
                if "=" in part:
                    k, v = part.split("=", 1)
                    labels[k.strip(", ")] = v.strip('"')
        try:
            out.append((name, labels, float(val)))
        except ValueError:
            pass
    return out


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError):
        return 0.0


def proc_mem(pid):
    """(RSS, private, anonymous) in MiB, from one read of smaps_rollup; anonymous is the
    process's own, whether or not another maps its files."""
    kb = {"Rss": 0, "Private_Clean": 0, "Private_Dirty": 0, "Anonymous": 0}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in kb:
                    kb[k] = int(v.split()[0])
    except OSError:
        pass
    return kb["Rss"] / 1024, (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024, kb["Anonymous"] / 1024


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


class Sample:
    """One reading of everything the window compares."""

    def __init__(self, api, pids):
        self.t = time.monotonic()
        m = prom(api.get("/metrics").decode())
        self.req = {}
        self.flows = 0.0
        self.watches = 0.0
        self.watch_by = {}
        for name, lb, v in m:
            if name == "apiserver_request_total":
                res = lb.get("resource", "") + ("/" + lb["subresource"] if lb.get("subresource") else "")
                k = (lb.get("verb", ""), res)
                self.req[k] = self.req.get(k, 0) + v
            elif name == "apiserver_flowcontrol_dispatched_requests_total" and \
                    lb.get("flow_schema") in ("system-nodes", "system-node-high"):
                self.flows += v
            elif name == "apiserver_longrunning_requests" and lb.get("verb") == "WATCH":
                self.watches += v
                r = lb.get("resource", "")
                self.watch_by[r] = self.watch_by.get(r, 0) + v
        with urllib.request.urlopen("http://127.0.0.1:2379/metrics", timeout=30) as f:
            em = prom(f.read().decode())
        ev = {}
        for name, lb, v in em:
            ev[name] = ev.get(name, 0) + v
        self.etcd_writes = ev.get("etcd_mvcc_put_total", ev.get("etcd_debugging_mvcc_put_total", 0)) + \
            ev.get("etcd_mvcc_delete_total", ev.get("etcd_debugging_mvcc_delete_total", 0))
        self.etcd_db = ev.get("etcd_mvcc_db_total_size_in_bytes", ev.get("etcd_debugging_mvcc_db_total_size_in_bytes", 0))
        self.cpu = {k: sum(proc_cpu(p) for p in v) for k, v in pids.items()}


def rate(a, b, f):
    return (f(b) - f(a)) / (b.t - a.t)


# ---- one kind at one N ------------------------------------------------------------------
class Run:
    def __init__(self, opt, kind, n):
        self.opt, self.kind, self.n = opt, kind, n
        self.dir = os.path.join(opt.out, "%s-%d" % (kind, n))
        self.cp = os.path.join(self.dir, "cp")
        self.procs = []
        self.fake = None
        self.cg = os.path.join(opt.cgroup, "cubelet-scale-%d" % os.getpid())
        self.res = {"kind": kind, "n": n}

    def pid(self, name):
        with open(os.path.join(self.cp, name + ".pid")) as f:
            return int(f.read())

    def start_cp(self):
        env = dict(os.environ)
        env["CP_CM_FLAGS"] = "--kube-api-qps=200 --kube-api-burst=400"
        env["CP_SCHED_FLAGS"] = "--kube-api-qps=200 --kube-api-burst=400"
        out = subprocess.run([os.path.join(ROOT, "tests/cluster/control-plane.sh"), "start", "-b",
                              os.path.join(self.opt.build_root, "cluster/kube"), "-d", self.cp, "-n", "scale"],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("the control plane did not start: " + out.stderr[-500:])
        self.api = Api(os.path.join(self.cp, "pki"))
        self.cp_pids = {"apiserver": [self.pid("apiserver")], "etcd": [self.pid("etcd")],
                        "controller-manager": [self.pid("controller-manager")], "scheduler": [self.pid("scheduler")]}
        self.api.req("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})

    def stop(self):
        for p in self.procs:
            try:
                p.send_signal(signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + 30
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.fake:
            self.fake.terminate()
            self.fake.wait()
        for d in set(glob.glob("/tmp/hollow-kubelet.*")) - getattr(self, "tmp_before", set()):
            shutil.rmtree(d, ignore_errors=True)
        subprocess.run([os.path.join(ROOT, "tests/cluster/control-plane.sh"), "stop", "-d", self.cp],
                       capture_output=True)
        for d, subs, _ in sorted(os.walk(self.cg, topdown=False), reverse=True):
            try:
                os.rmdir(d)
            except OSError:
                pass

    def cubelet_config(self, i, name):
        d = os.path.join(self.dir, name)
        os.makedirs(os.path.join(d, "manifests"), exist_ok=True)
        os.makedirs(os.path.join(self.cg, name), exist_ok=True)
        pki = os.path.join(self.cp, "pki")
        with open(os.path.join(d, "config.yaml"), "w") as f:
            f.write("""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
readOnlyPort: 0
port: %d
maxPods: %d
cgroupsPerQOS: false
enforceNodeAllocatable: []
podLogsDir: %s/logs
tlsCertFile: %s/kubelet.crt
tlsPrivateKeyFile: %s/kubelet.key
authentication: {x509: {clientCAFile: %s/ca.crt}}
cubelet:
  devicePluginDir: %s/dp
  stateDir: %s/state
  socket: %s/cubelet.sock
  cniConfDir: ""
""" % (20000 + i, self.opt.max_pods, d, pki, pki, pki, d, d, d))
        return [os.path.join(self.opt.build, "cubelet"), "run", "--config", os.path.join(d, "config.yaml"),
                "--manifest-dir", os.path.join(d, "manifests"),
                "--runtime-endpoint", "unix://%s/cri/cri-%d.sock" % (self.dir, i),
                "--cgroup-root", os.path.join(self.cg, name), "--node-name", name,
                "--kubeconfig", os.path.join(self.dir, "nodes", name + ".kubeconfig"), "--node-ip", "127.0.0.1"]

    def kubemark_args(self, i, name):
        return [os.path.join(self.opt.build_root, "cluster/hollow"), "kubemark", "--morph=kubelet",
                "--name", name, "--kubeconfig", os.path.join(self.dir, "nodes", name + ".kubeconfig"),
                "--kubelet-port", str(20000 + i), "--kubelet-read-only-port", "0",
                "--use-host-image-service=false", "--max-pods", str(self.opt.max_pods)]

    def start_nodes(self):
        prefix = "hc" if self.kind == "cubelet" else "hk"
        subprocess.run([os.path.join(HERE, "node-certs.sh"), os.path.join(self.cp, "pki"),
                        os.path.join(self.dir, "nodes"), prefix, str(self.n)], check=True)
        if self.kind == "cubelet":
            self.fake = subprocess.Popen([os.path.join(self.opt.build_root, "cluster/hollow"), "fake-cri",
                                          os.path.join(self.dir, "cri"), str(self.n)],
                                         stdout=open(os.path.join(self.dir, "fake-cri.log"), "w"),
                                         stderr=subprocess.STDOUT)
            for _ in range(600):
                if os.path.exists(os.path.join(self.dir, "cri", "cri-%d.sock" % (self.n - 1))):
                    break
                time.sleep(0.1)
        self.started = 0
        self.stopped_by = None
        # kubemark's hollow kubelet makes its root directory in /tmp, whatever
        # TMPDIR says (pkg/kubemark: MakeTempDirOrDie("hollow-kubelet.", "")):
        # stop() removes those that were not there before
        self.tmp_before = set(glob.glob("/tmp/hollow-kubelet.*"))
        t0 = time.monotonic()
        for i in range(self.n):
            if i % 10 == 0 and mem_available_mb() < self.opt.mem_floor:
                self.stopped_by = "MemAvailable under %d MiB after %d nodes" % (self.opt.mem_floor, i)
                log("%s: %s" % (self.kind, self.stopped_by))
                break
            name = "%s-%d" % (prefix, i)
            args = self.cubelet_config(i, name) if self.kind == "cubelet" else self.kubemark_args(i, name)
            lf = open(os.path.join(self.dir, name + ".log"), "w")
            self.procs.append(subprocess.Popen(args, stdout=lf, stderr=subprocess.STDOUT, cwd=self.dir))
            lf.close()
            self.started += 1
            if self.kind == "kubelet" and i % 10 == 9:
                time.sleep(1)  # kubemark's start is CPU-bound: a burst of hundreds starves the API server
        Api.timeouts = 0
        self.res["started"] = self.started
        self.res["stopped_by"] = self.stopped_by
        # all Ready
        ready = 0
        deadline = time.monotonic() + 300 + self.started
        while time.monotonic() < deadline:
            nodes = self.api.get("/api/v1/nodes")["items"]
            ready = sum(1 for nd in nodes for c in nd["status"].get("conditions", [])
                        if c["type"] == "Ready" and c["status"] == "True")
            if ready >= self.started:
                break
            time.sleep(5)
        self.res["ready"] = ready
        self.res["ready_s"] = round(time.monotonic() - t0, 1)
        gone = [p for p in self.procs if p.poll() is not None]
        if gone:  # a node that exited: how many, and the last line of one's log
            self.res["exited"] = len(gone)
            with open(os.path.join(self.dir, "%s-%d.log" % (prefix, self.procs.index(gone[0])))) as f:
                self.res["exit_reason"] = (f.read().strip().splitlines() or [""])[-1][:200]
            log("%s N=%d: %d nodes exited: %s" % (self.kind, self.n, len(gone), self.res["exit_reason"]))
        log("%s N=%d: %d of %d started nodes Ready in %.0f s" % (self.kind, self.n, ready, self.started,
                                                                  self.res["ready_s"]))

    def node_pids(self):
        return [p.pid for p in self.procs if p.poll() is None]

    def pids(self):
        d = dict(self.cp_pids)
        d["nodes"] = self.node_pids()
        d["fake-cri"] = [self.fake.pid] if self.fake else []
        return d

    def leases(self):
        items = self.api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")["items"]
        now = time.time()
        ages = {}
        for it in items:
            rt = it["spec"].get("renewTime")
            if rt:
                ts = calendar.timegm(time.strptime(rt[:19], "%Y-%m-%dT%H:%M:%S"))
                ts += float("0" + rt[19:].rstrip("Z")) if rt[19:20] == "." else 0
                ages[it["metadata"]["name"]] = now - ts
        return ages

    def window(self, base):
        time.sleep(self.opt.settle)
        a = Sample(self.api, self.pids())
        late, missed, max_age = set(), set(), 0.0
        end = time.monotonic() + self.opt.window
        while time.monotonic() < end:
            for name, age in self.leases().items():
                max_age = max(max_age, age)
                if age > 40:
                    missed.add(name)
                elif age > 15:
                    late.add(name)
            time.sleep(5)
        b = Sample(self.api, self.pids())
        n = max(1, self.started)
        r = self.res
        by = {}
        for k in b.req:
            v = (b.req[k] - a.req.get(k, 0)) / (b.t - a.t)
            if v > 0.0005:
                by["%s %s" % k] = round(v, 3)
        r["req_by"] = by
        r["req_s"] = round(sum(by.values()), 2)
        r["req_s_base"] = base["req_s"]
        r["node_req_s"] = round(rate(a, b, lambda s: s.flows), 2)
        r["watches"] = b.watches
        r["watches_base"] = base["watches"]
        r["watch_by"] = {k: v - base["watch_by"].get(k, 0) for k, v in b.watch_by.items()
                         if v - base["watch_by"].get(k, 0) > 0}
        r["etcd_writes_s"] = round(rate(a, b, lambda s: s.etcd_writes), 2)
        r["etcd_writes_s_base"] = base["etcd_writes_s"]
        r["etcd_db_mb"] = round(b.etcd_db / 2**20, 1)
        for k in ("apiserver", "etcd", "controller-manager", "scheduler", "nodes", "fake-cri"):
            r["cpu_" + k] = round(100 * rate(a, b, lambda s: s.cpu.get(k, 0)), 1)  # % of one core
        for k in ("apiserver", "etcd"):
            r["cpu_%s_base" % k] = base["cpu_" + k]
            r["rss_" + k] = round(proc_mem(self.cp_pids[k][0])[0], 1)
            r["rss_%s_base" % k] = base["rss_" + k]
        mems = [proc_mem(p) for p in self.node_pids()]
        r["node_rss_mb"] = round(sum(m[0] for m in mems) / max(1, len(mems)), 1)
        r["node_private_mb"] = round(sum(m[1] for m in mems) / max(1, len(mems)), 1)
        r["fake_cri_private_mb"] = round(proc_mem(self.fake.pid)[1], 1) if self.fake else 0
        r["lease_late"], r["lease_missed"], r["lease_max_age_s"] = len(late), len(missed), round(max_age, 1)
        r["alive"] = len(mems)
        log("%s N=%d: %.1f API req/s (nodes %.1f), API server %.1f%%, nodes %.1f%% of a core, "
            "%.1f MiB private each, leases late %d missed %d" % (
                self.kind, self.n, r["req_s"], r["node_req_s"], r["cpu_apiserver"], r["cpu_nodes"],
                r["node_private_mb"], len(late), len(missed)))

    def baseline(self):
        time.sleep(self.opt.baseline / 3)
        a = Sample(self.api, self.cp_pids)
        time.sleep(self.opt.baseline * 2 / 3)
        b = Sample(self.api, self.cp_pids)
        return {"req_s": round(sum(b.req[k] - a.req.get(k, 0) for k in b.req) / (b.t - a.t), 2),
                "watches": b.watches, "watch_by": b.watch_by,
                "etcd_writes_s": round(rate(a, b, lambda s: s.etcd_writes), 2),
                "cpu_apiserver": round(100 * rate(a, b, lambda s: s.cpu["apiserver"]), 1),
                "cpu_etcd": round(100 * rate(a, b, lambda s: s.cpu["etcd"]), 1),
                "rss_apiserver": round(proc_mem(self.cp_pids["apiserver"][0])[0], 1),
                "rss_etcd": round(proc_mem(self.cp_pids["etcd"][0])[0], 1)}

    def status_writes(self, s):
        return sum(v for (verb, res), v in s.req.items() if res == "pods/status" and verb in ("PATCH", "UPDATE", "APPLY"))

    def pods(self):
        want = self.started * self.opt.pods
        r = self.res
        r["pods"] = want
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pause", "namespace": NS},
               "spec": {"replicas": want, "selector": {"matchLabels": {"app": "pause"}},
                        "template": {"metadata": {"labels": {"app": "pause"}},
                                     "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                                              "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}],
                                              "terminationGracePeriodSeconds": 1}}}}
        a = Sample(self.api, self.pids())
        t0 = time.monotonic()
        self.api.req("POST", "/apis/apps/v1/namespaces/%s/deployments" % NS, dep)
        ready = 0
        deadline = t0 + self.opt.pod_timeout
        while time.monotonic() < deadline:
            st = self.api.get("/apis/apps/v1/namespaces/%s/deployments/pause" % NS).get("status", {})
            ready = st.get("readyReplicas", 0)
            if ready >= want:
                break
            time.sleep(2)
        r["pods_ready"] = ready
        r["pods_ready_s"] = round(time.monotonic() - t0, 1)
        time.sleep(10)  # the last status writes
        b = Sample(self.api, self.pids())
        r["status_writes_per_pod"] = round((self.status_writes(b) - self.status_writes(a)) / max(1, want), 2)
        r["pods_req_s"] = round(sum(b.req[k] - a.req.get(k, 0) for k in b.req) / (b.t - a.t), 1)
        r["pods_cpu_apiserver"] = round(100 * rate(a, b, lambda s: s.cpu["apiserver"]), 1)
        r["pods_cpu_nodes"] = round(100 * rate(a, b, lambda s: s.cpu["nodes"]), 1)
        # CPU seconds from the Deployment's creation to 10 s after all were ready
        r["pods_cpu_s_apiserver"] = round(b.cpu["apiserver"] - a.cpu["apiserver"], 1)
        r["pods_cpu_s_nodes"] = round(b.cpu["nodes"] - a.cpu["nodes"], 1)
        r["pods_cpu_s_fake"] = round(b.cpu["fake-cri"] - a.cpu["fake-cri"], 1)
        log("%s N=%d: %d of %d pods ready in %.0f s, %.2f status writes per pod" % (
            self.kind, self.n, ready, want, r["pods_ready_s"], r["status_writes_per_pod"]))
        t0 = time.monotonic()
        self.api.req("DELETE", "/apis/apps/v1/namespaces/%s/deployments/pause" % NS,
                     {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        left = want
        deadline = t0 + self.opt.pod_timeout
        while time.monotonic() < deadline:
            lst = self.api.get("/api/v1/namespaces/%s/pods?limit=1" % NS)
            left = len(lst["items"]) + lst["metadata"].get("remainingItemCount", 0)
            if left == 0:
                break
            time.sleep(2)
        r["pods_left"] = left
        r["pods_gone_s"] = round(time.monotonic() - t0, 1)
        log("%s N=%d: %d pods left %.0f s after the deletion" % (self.kind, self.n, left, r["pods_gone_s"]))

    def scale_to(self, count):
        """The Deployment at COUNT replicas, all ready; seconds taken."""
        t0 = time.monotonic()
        if count:
            self.api.req("PATCH", "/apis/apps/v1/namespaces/%s/deployments/pause" % NS, {"spec": {"replicas": count}})
        while time.monotonic() < t0 + self.opt.pod_timeout:
            st = self.api.get("/apis/apps/v1/namespaces/%s/deployments/pause" % NS).get("status", {})
            if st.get("readyReplicas", 0) >= count and st.get("replicas", 0) == count:
                return round(time.monotonic() - t0, 1)
            time.sleep(2)
        return None

    def density(self):
        """One node, its idle cost at each pod count (--counts)."""
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pause", "namespace": NS},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "pause"}},
                        "template": {"metadata": {"labels": {"app": "pause"}},
                                     "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
                                              "terminationGracePeriodSeconds": 1}}}}
        self.api.req("POST", "/apis/apps/v1/namespaces/%s/deployments" % NS, dep)
        self.res["density"] = []
        for count in [int(x) for x in self.opt.counts.split(",")]:
            took = self.scale_to(count)
            time.sleep(self.opt.settle)
            a = Sample(self.api, self.pids())
            time.sleep(self.opt.window)
            b = Sample(self.api, self.pids())
            rss, priv, anon = proc_mem(self.node_pids()[0]) if self.node_pids() else (0, 0, 0)
            d = {"pods": count, "ready_s": took, "cpu_node": round(100 * rate(a, b, lambda s: s.cpu["nodes"]), 2),
                 "cpu_fake": round(100 * rate(a, b, lambda s: s.cpu["fake-cri"]), 2),
                 "cpu_apiserver": round(100 * rate(a, b, lambda s: s.cpu["apiserver"]), 2),
                 "node_req_s": round(rate(a, b, lambda s: s.flows), 3),
                 "status_writes_s": round(rate(a, b, self.status_writes), 3),
                 "rss_mb": round(rss, 1), "private_mb": round(priv, 1),
                 "anon_mb": round(anon, 1)}
            self.res["density"].append(d)
            log("%s with %d pods (ready in %s s): %.2f%% of a core, %.1f MiB private, %.3f API req/s" % (
                self.kind, count, took, d["cpu_node"], priv, d["node_req_s"]))

    def go(self):
        shutil.rmtree(self.dir, ignore_errors=True)  # a fresh control plane: no earlier run's etcd
        os.makedirs(self.dir, exist_ok=True)
        try:
            self.start_cp()
            base = self.baseline()
            self.res["base"] = base
            self.start_nodes()
            if self.opt.counts:
                self.density()
                return self.res
            self.window(base)
            if self.opt.pods > 0:
                self.pods()
        except Exception as e:  # noqa: BLE001 - said in the results, the next run goes on
            self.res["error"] = "%s: %s" % (type(e).__name__, e)
            log("%s N=%d: %s" % (self.kind, self.n, self.res["error"]))
        finally:
            self.res["api_timeouts"] = Api.timeouts
            self.stop()
        return self.res


def cmd_run(opt):
    os.makedirs(opt.out, exist_ok=True)
    path = os.path.join(opt.out, "density.json" if opt.counts else "results.json")
    results = []
    if os.path.exists(path):  # an earlier run's other kinds and Ns are kept
        with open(path) as f:
            results = json.load(f)["results"]
    for n in [int(x) for x in opt.nodes.split(",")]:
        for kind in opt.kinds.split(","):
            log("%s, N=%d" % (kind, n))
            res = Run(opt, kind, n).go()
            results = [r for r in results if (r["kind"], r["n"]) != (kind, n)] + [res]
            with open(path, "w") as f:
                json.dump({"machine": machine(), "window_s": opt.window, "pods_per_node": opt.pods, "counts": opt.counts,
                           "results": results}, f, indent=1)
    log("results: " + path)


def machine():
    with open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return "%s, %d CPUs, %d MiB" % (model, os.cpu_count(), mem)


def main():
    # stopped (kill, a CI's timeout): each run's finally stops its nodes and control plane
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench-scale: terminated"))
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build", required=True, help="cubelet's build directory (its cubelet)")
    r.add_argument("--build-root", default=os.path.join(ROOT, "build"), help="the build/ with cluster/kube, cluster/hollow")
    r.add_argument("--out", required=True)
    r.add_argument("--kinds", default="cubelet,kubelet")
    r.add_argument("--nodes", default="10,100,500,1000")
    r.add_argument("--window", type=int, default=60)
    r.add_argument("--settle", type=int, default=30)
    r.add_argument("--baseline", type=int, default=30, help="seconds of the idle control plane measured first")
    r.add_argument("--pods", type=int, default=10, help="pods per node in the Deployment (0: none)")
    r.add_argument("--pod-timeout", type=int, default=900)
    r.add_argument("--mem-floor", type=int, default=3072, help="MiB of MemAvailable under which no more nodes start")
    r.add_argument("--max-pods", type=int, default=110)
    r.add_argument("--counts", default="", help="pods per node: one node at each count (the density run)")
    r.add_argument("--cgroup", required=True, help="a cgroup2 directory for the cubelets' roots")
    d = sub.add_parser("render")
    d.add_argument("results")
    d.add_argument("doc")
    d.add_argument("plot")
    opt = ap.parse_args()
    if opt.cmd == "run":
        opt.build = os.path.abspath(opt.build)
        cmd_run(opt)
    else:
        sys.path.insert(0, HERE)
        import render  # noqa: E402 - the table's own file
        render.render(opt.results, opt.doc, opt.plot)


if __name__ == "__main__":
    main()
