# SPDX-License-Identifier: Apache-2.0
"""`cubelet run` (the agent's loop and its device manager) against a grpcio
device plugin whose Allocate stops answering: the loop must go on.

No container runtime: cubelet runs with a CRI socket that does not exist, so
what is observable is admission and the HTTP API (/healthz, /pods), the
journal (stderr), the device checkpoint and the plugin's side of the calls.
Needs root and a cgroup2 mount (the agent's cgroup root is a fresh child of
it); skips otherwise. Run by tests/interop/run-device-manager.sh. TAP.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent import futures

import grpc

ap = argparse.ArgumentParser()
ap.add_argument("--cubelet", required=True)
ap.add_argument("--pb", required=True)
ap.add_argument("--tmp", required=True)
args = ap.parse_args()
sys.path.insert(0, args.pb)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto.deviceplugin import api_pb2  # noqa: E402
from tap import check, done  # noqa: E402

RESOURCE = "example.com/foo"
SOCK = "dm-hang.sock"
DEVICES = ["foo-0", "foo-1", "foo-2"]
RPC_TIMEOUT = 10.0  # DP_RPC_TIMEOUT_USEC


def cgroup2_mount():
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return parts[1]
    return None


class Plugin:
    """RESOURCE with three devices; Allocate hangs while `hang` is set."""

    def __init__(self, d):
        self.requests = []
        self.hang = threading.Event()
        self.release = threading.Event()
        self.allocate_seen = threading.Event()
        self.health = {i: "Healthy" for i in DEVICES}
        self.changed = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        h = {
            "GetDevicePluginOptions": grpc.unary_unary_rpc_method_handler(
                lambda req, ctx: api_pb2.DevicePluginOptions(), api_pb2.Empty.FromString,
                api_pb2.DevicePluginOptions.SerializeToString),
            "ListAndWatch": grpc.unary_stream_rpc_method_handler(
                self.list_and_watch, api_pb2.Empty.FromString, api_pb2.ListAndWatchResponse.SerializeToString),
            "Allocate": grpc.unary_unary_rpc_method_handler(
                self.allocate, api_pb2.AllocateRequest.FromString, api_pb2.AllocateResponse.SerializeToString),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("v1beta1.DevicePlugin", h),))
        self.server.add_insecure_port("unix:" + os.path.join(d, SOCK))
        self.server.start()

    def stop(self):
        self.release.set()
        self.server.stop(0)

    def list_and_watch(self, req, ctx):
        yield api_pb2.ListAndWatchResponse(devices=[api_pb2.Device(ID=i, health=self.health[i]) for i in DEVICES])
        while ctx.is_active():
            if self.changed.wait(0.05):
                self.changed.clear()
                yield api_pb2.ListAndWatchResponse(devices=[api_pb2.Device(ID=i, health=self.health[i])
                                                            for i in DEVICES])

    def set_health(self, dev, health):
        self.health[dev] = health
        self.changed.set()

    def allocate(self, req, ctx):
        self.requests.append(req)
        self.allocate_seen.set()
        if self.hang.is_set():
            self.release.wait(3 * RPC_TIMEOUT)  # never answers in time
        ids = sorted(req.container_requests[0].devices_ids)
        return api_pb2.AllocateResponse(container_responses=[
            api_pb2.ContainerAllocateResponse(envs={"FOO_VISIBLE_DEVICES": ",".join(ids)})])


def register(d):
    with grpc.insecure_channel("unix:" + os.path.join(d, "kubelet.sock")) as ch:
        call = ch.unary_unary("/v1beta1.Registration/Register",
                              request_serializer=api_pb2.RegisterRequest.SerializeToString,
                              response_deserializer=api_pb2.Empty.FromString)
        call(api_pb2.RegisterRequest(version="v1beta1", endpoint=SOCK, resource_name=RESOURCE), timeout=5,
             wait_for_ready=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, timeout=1.0):
    """(seconds taken, body) or (seconds, None) when it did not answer within timeout."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return time.monotonic() - t0, r.read().decode()
    except OSError:
        return time.monotonic() - t0, None


def pod(port, name):
    _, body = get(port, "/pods", timeout=2)
    if body is None:
        return None
    for p in json.loads(body).get("items", []):
        if p["metadata"]["name"] == name:
            return p
    return None


def wait_until(fn, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    return None


def manifest(d, name, foo=0):
    limits = {"cpu": "100m", "memory": "16Mi"}
    if foo:
        limits[RESOURCE] = str(foo)
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name + "-uid"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}}]}}
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, os.path.join(d, name + ".json"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    cg = cgroup2_mount()
    if os.geteuid() != 0 or cg is None:
        print("1..0 # SKIP cubelet run needs root and a cgroup2 mount")
        sys.exit(77)
    base = os.path.join(args.tmp, "agent")
    mdir, dpdir, state, cni = (os.path.join(base, x) for x in ("manifests", "dp", "state", "cni"))
    for x in (mdir, dpdir, state, cni):
        os.makedirs(x)
    cgroot = os.path.join(cg, "cubelet-interop-%d" % os.getpid())
    os.makedirs(cgroot, exist_ok=True)
    port = free_port()
    cfg = os.path.join(base, "config.yaml")
    with open(cfg, "w") as f:
        f.write(f"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreadOnlyPort: {port}\n"
                f"podLogsDir: {base}/logs\n"
                f"cubelet:\n  devicePluginDir: {dpdir}\n  stateDir: {state}\n  socket: {state}/cubelet.sock\n"
                f"  cniConfDir: {cni}\n")
    log = []
    p = subprocess.Popen([args.cubelet, "run", "--config", cfg, "--manifest-dir", mdir, "--runtime-endpoint",
                          f"unix://{base}/no-runtime.sock", "--cgroup-root", cgroot, "--node-name", "n1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    threading.Thread(target=lambda: log.extend(iter(p.stderr.readline, "")), daemon=True).start()
    plugin = None
    try:
        check(wait_until(lambda: os.path.exists(os.path.join(dpdir, "kubelet.sock")), 10),
              "cubelet run serves the device plugin directory's kubelet.sock", "".join(log))
        plugin = Plugin(dpdir)
        register(dpdir)
        check(wait_until(lambda: any(f"device plugin {RESOURCE} ({SOCK}): connected, 3 devices, 3 allocatable" in x
                                     for x in log), 10),
              "the plugin's 3 devices become allocatable", "".join(log))

        # (a) Allocate hangs: the loop goes on
        plugin.hang.set()
        manifest(mdir, "gpu", foo=1)
        check(plugin.allocate_seen.wait(10), "the GPU pod's Allocate reaches the plugin (which does not answer)")
        t_hang = time.monotonic()
        cpu0 = cpu_seconds(p.pid)
        took, body = get(port, "/healthz")
        check(body == "ok" and took < 1.0, "during the hang /healthz answers within 1 s", (took, body))
        took, body = get(port, "/pods")
        check(body is not None and took < 1.0, "during the hang /pods answers within 1 s", (took, body))
        manifest(mdir, "plain")
        check(wait_until(lambda: any("pod default/plain-n1 admitted" in x for x in log), 1.0),
              "during the hang a pod without devices is admitted within 1 s (the journal)", "".join(log))
        # /pods serves a snapshot up to 2 s old (API_HTTP_STALE_USEC)
        plain = wait_until(lambda: pod(port, "plain-n1"), 3.0)
        check(plain is not None and plain["status"]["phase"] == "Pending" and time.monotonic() - t_hang < RPC_TIMEOUT,
              "...and /pods shows it (Pending: there is no runtime) before the GPU pod's deadline",
              plain and plain["status"])
        gpu = pod(port, "gpu-n1")
        check(gpu is not None and gpu["status"]["phase"] == "Pending"
              and all("running" not in c.get("state", {}) for c in gpu["status"].get("containerStatuses", [])),
              "the GPU pod waits (Pending, no container started) while its Allocate is unanswered",
              gpu and gpu["status"])
        with open(os.path.join(dpdir, "kubelet_internal_checkpoint")) as f:
            text = f.read()
        check("gpu-uid" not in text, "the pending allocation is not in the checkpoint", text)

        # (b) after the deadline: rejected with kubelet's reason and message
        failed = wait_until(lambda: (lambda x: x if x and x["status"]["phase"] == "Failed" else None)(
            pod(port, "gpu-n1")), RPC_TIMEOUT + 5)
        waited = time.monotonic() - t_hang
        st = failed["status"] if failed else {}
        msg = st.get("message", "")
        check(st.get("reason") == "UnexpectedAdmissionError", "the GPU pod fails with reason UnexpectedAdmissionError",
              st)
        check(msg.startswith("Pod was rejected: Allocate failed due to 'unix://" + os.path.join(dpdir, SOCK) + "': "
                             "/v1beta1.DevicePlugin/Allocate: DEADLINE_EXCEEDED (4)")
              and msg.endswith(", which is unexpected"),
              "...with kubelet's message \"Pod was rejected: Allocate failed due to <the deadline>, which is "
              "unexpected\"", msg)
        check(RPC_TIMEOUT - 1.5 < waited < RPC_TIMEOUT + 4, "...at the 10 s deadline", waited)
        cpu = cpu_seconds(p.pid) - cpu0
        check(cpu < 2.0, "cubelet used little CPU during the hang (no busy wait)", f"{cpu:.2f} s over {waited:.1f} s")
        fails = [x for x in log if "Allocate failed" in x]
        check(len(fails) <= 2, "the journal has one warning and one rejection line for it, not one per poll",
              "".join(fails))

        # (c) the plugin answers again: the next pod gets its devices (all 3: the rejected pod's were freed)
        plugin.hang.clear()
        plugin.release.set()
        n0 = len(plugin.requests)
        manifest(mdir, "gpu2", foo=3)

        wait_until(lambda: len(plugin.requests) > n0, 10)
        reqs = plugin.requests[n0:]
        check(len(reqs) == 1 and sorted(reqs[0].container_requests[0].devices_ids) == DEVICES,
              "the next pod's Allocate asks for all 3 devices (the rejected pod's were freed)", reqs)

        def checkpointed():
            with open(os.path.join(dpdir, "kubelet_internal_checkpoint")) as f:
                t = f.read()
            return t if "gpu2-uid" in t else None
        text = wait_until(checkpointed, 5)
        check(text is not None and "gpu-uid" not in text and all(d in text for d in DEVICES),
              "the checkpoint holds the next pod's 3 devices and nothing of the rejected pod", text)
        gp = wait_until(lambda: pod(port, "gpu2-n1"), 3.0)
        check(gp is not None and gp["status"]["phase"] == "Pending" and gp["status"].get("reason") is None,
              "the next pod is admitted (not rejected)", gp and gp["status"])

        # (d) its devices' health in its container status (KEP-4680), and on /metrics
        def ars(health):
            return [{"name": RESOURCE, "resources": [{"resourceID": d, "health": health.get(d, "Healthy")}
                                                      for d in DEVICES]}]

        def ars_is(want):
            q = pod(port, "gpu2-n1")
            got = q and q["status"]["containerStatuses"][0].get("allocatedResourcesStatus")
            return got if got == want else None
        check(wait_until(lambda: ars_is(ars({})), 3.0),
              "/pods: the container's allocatedResourcesStatus lists its 3 devices, Healthy",
              (pod(port, "gpu2-n1") or {}).get("status"))
        plugin.set_health(DEVICES[1], "Unhealthy")
        check(wait_until(lambda: ars_is(ars({DEVICES[1]: "Unhealthy"})), 4.0),
              "a device turns Unhealthy on ListAndWatch: /pods shows it so within the snapshot's 2 s",
              (pod(port, "gpu2-n1") or {}).get("status"))
        plugin.set_health(DEVICES[1], "Healthy")
        check(wait_until(lambda: ars_is(ars({})), 4.0), "...and Healthy again when the plugin says so")
        _, m = get(port, "/metrics", timeout=2)
        want = [f'cubelet_device_health_changes_total{{resource_name="{RESOURCE}",health="Unhealthy"}} 1',
                f'cubelet_device_health_changes_total{{resource_name="{RESOURCE}",health="Healthy"}} 1',
                f'cubelet_device_plugin_devices{{resource_name="{RESOURCE}",health="Healthy"}} 3']
        check(m is not None and all(w in m.splitlines() for w in want),
              "/metrics counts the two health changes; 3 devices Healthy",
              m and [x for x in m.splitlines() if "cubelet_device" in x])
        took, body = get(port, "/healthz")
        check(p.poll() is None and body == "ok", "cubelet is still running and healthy", (p.poll(), body))
    finally:
        if plugin:
            plugin.stop()
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
        for root, dirs, _ in os.walk(cgroot, topdown=False):
            for x in dirs:
                try:
                    os.rmdir(os.path.join(root, x))
                except OSError:
                    pass
        try:
            os.rmdir(cgroot)
        except OSError:
            pass
        shutil.rmtree(base, ignore_errors=True)
    done()


main()
