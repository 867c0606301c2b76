# SPDX-License-Identifier: Apache-2.0
"""cubelet-gpu-plugin against grpcio: a Python v1beta1.Registration server
(the kubelet's half) and a Python DevicePlugin client, over the fake NVML.

Run by tests/interop/run-gpu-plugin.sh, which generates api_pb2 with protoc.
Prints TAP: one line per exact check. --bench adds the Allocate round trip
(p50/p99 over 1000 calls) beside a Python server's empty unary call.
"""
import argparse
import os
import queue
import signal
import stat
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

ap = argparse.ArgumentParser()
ap.add_argument("--plugin", required=True)
ap.add_argument("--nvml", required=True)
ap.add_argument("--pb", required=True)
ap.add_argument("--tmp", required=True)
ap.add_argument("--bench", action="store_true")
args = ap.parse_args()
sys.path.insert(0, args.pb)
from proto.deviceplugin import api_pb2  # noqa: E402
from tap import check, done  # noqa: E402

U0 = "GPU-0fa1c2d3-1111-2222-3333-444455556666"
U1 = "GPU-9e8d7c6b-aaaa-bbbb-cccc-ddddeeeeffff"
SOCK = "cubelet-gpu.sock"
RESOURCE = "nvidia.com/gpu"



def ser(m):
    return m.SerializeToString()


class RegistrationServer:
    """The kubelet's Registration service on DIR/kubelet.sock. Like a current
    kubelet, Register dials the plugin back and calls GetDevicePluginOptions
    before it answers."""

    def __init__(self, dp_dir):
        self.dir = dp_dir
        self.registrations = queue.Queue()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handlers = {
            "Register": grpc.unary_unary_rpc_method_handler(
                self.register,
                request_deserializer=api_pb2.RegisterRequest.FromString,
                response_serializer=ser,
            ),
            "Ping": grpc.unary_unary_rpc_method_handler(
                lambda req, ctx: api_pb2.Empty(),
                request_deserializer=api_pb2.Empty.FromString,
                response_serializer=ser,
            ),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("v1beta1.Registration", handlers),)
        )
        self.server.add_insecure_port("unix:" + os.path.join(dp_dir, "kubelet.sock"))
        self.server.start()

    def register(self, req, ctx):
        opts = None
        error = None
        try:
            with grpc.insecure_channel("unix:" + os.path.join(self.dir, req.endpoint)) as ch:
                call = ch.unary_unary(
                    "/v1beta1.DevicePlugin/GetDevicePluginOptions",
                    request_serializer=ser,
                    response_deserializer=api_pb2.DevicePluginOptions.FromString,
                )
                opts = call(api_pb2.Empty(), timeout=5, wait_for_ready=True)
        except grpc.RpcError as e:
            error = e
        self.registrations.put((time.monotonic(), req, opts, error))
        return api_pb2.Empty()

    def stop(self):
        self.server.stop(grace=0).wait()
        try:
            os.unlink(os.path.join(self.dir, "kubelet.sock"))
        except FileNotFoundError:
            pass


class Plugin:
    def __init__(self, tmp, name, dp_dir, extra=(), env=None):
        self.log_path = os.path.join(tmp, name + ".log")
        self.log = open(self.log_path, "w")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [args.plugin, "--device-plugin-dir", dp_dir, *extra],
            stdout=self.log, stderr=self.log, env=e,
        )

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()

    def term(self, timeout=15):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class Client:
    def __init__(self, dp_dir):
        self.ch = grpc.insecure_channel("unix:" + os.path.join(dp_dir, SOCK))

    def unary(self, method, req, resp_type, timeout=5):
        call = self.ch.unary_unary(
            "/v1beta1.DevicePlugin/" + method, request_serializer=ser,
            response_deserializer=resp_type.FromString,
        )
        return call(req, timeout=timeout, wait_for_ready=True)

    def allocate(self, *containers):
        req = api_pb2.AllocateRequest(
            container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=ids) for ids in containers]
        )
        return self.unary("Allocate", req, api_pb2.AllocateResponse)

    def preferred(self, available, must, size):
        req = api_pb2.PreferredAllocationRequest(container_requests=[
            api_pb2.ContainerPreferredAllocationRequest(
                available_deviceIDs=available, must_include_deviceIDs=must, allocation_size=size)
        ])
        return list(self.unary("GetPreferredAllocation", req,
                               api_pb2.PreferredAllocationResponse).container_responses[0].deviceIDs)

    def watch(self):
        """ListAndWatch into a queue, read on a thread of its own."""
        q = queue.Queue()
        call = self.ch.unary_stream(
            "/v1beta1.DevicePlugin/ListAndWatch", request_serializer=ser,
            response_deserializer=api_pb2.ListAndWatchResponse.FromString,
        )
        stream = call(api_pb2.Empty(), wait_for_ready=True)

        def reader():
            try:
                for m in stream:
                    q.put(m)
            except grpc.RpcError as e:
                q.put(e)

        threading.Thread(target=reader, daemon=True).start()
        return stream, q

    def close(self):
        self.ch.close()


def devices(msg):
    return [(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in msg.devices]


def specs(resp):
    return [(d.container_path, d.host_path, d.permissions) for d in resp.devices]


def rpc_error(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e
    return None


def get(q, timeout):
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        return None


def setup(tmp):
    dp = os.path.join(tmp, "dp")
    root = os.path.join(tmp, "root")  # --dev-root: the nodes are root/dev/...
    dev = os.path.join(root, "dev")
    sysfs = os.path.join(tmp, "sys")
    os.makedirs(dp)
    os.makedirs(dev)
    for bus, node in (("0000:3b:00.0", "0"), ("0000:af:00.0", "1")):
        os.makedirs(os.path.join(sysfs, "bus/pci/devices", bus))
        with open(os.path.join(sysfs, "bus/pci/devices", bus, "numa_node"), "w") as f:
            f.write(node + "\n")
    # nvidia-uvm-tools is left out on purpose: Allocate must omit it
    for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidiactl", 255), ("nvidia-uvm", 0)):
        path = os.path.join(dev, name)
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195 if name != "nvidia-uvm" else 510, minor))
        except PermissionError:
            open(path, "w").close()
    conf = os.path.join(tmp, "nvml.conf")
    with open(conf, "w") as f:
        f.write(f"gpu {U1} 1 0000:AF:00.0 NVIDIA Fake H100\n")
        f.write(f"gpu {U0} 0 0000:3b:00.0 NVIDIA Fake H100\n")
    return dp, root, sysfs, conf


def percentile(sorted_vals, p):
    return sorted_vals[min(len(sorted_vals) - 1, int(len(sorted_vals) * p / 100))]


def main():
    tmp = args.tmp
    dp, dev, sysfs, conf = setup(tmp)
    env = {"FAKE_NVML_CONFIG": conf, "CUBELET_GPU_SYS_ROOT": sysfs}
    base = ["--nvml-library", args.nvml, "--dev-root", dev]

    # ---- registration ----------------------------------------------------------
    reg = RegistrationServer(dp)
    plugin = Plugin(tmp, "plugin", dp, base + ["--health-recheck-sec", "1"], env)
    r = get(reg.registrations, 15)
    check(r is not None, "the plugin registers with kubelet.sock", plugin.stderr())
    if r is None:
        plugin.term()
        return
    if stat.S_ISCHR(os.stat(os.path.join(dev, "dev/nvidia0")).st_mode):
        links = {n: os.readlink(os.path.join(dev, "dev/char", n)) for n in os.listdir(os.path.join(dev, "dev/char"))}
        check(links == {"195:0": "../nvidia0", "195:1": "../nvidia1", "195:255": "../nvidiactl",
                        "510:0": "../nvidia-uvm"},
              "/dev/char/<major>:<minor> links to each NVIDIA node, as udev makes them", links)
    else:
        print("ok - /dev/char links # SKIP no mknod here")
    _, req, opts, err = r
    check(req.version == "v1beta1", "Register: version 'v1beta1'", req)
    check(req.endpoint == SOCK, "Register: endpoint 'cubelet-gpu.sock'", req)
    check(req.resource_name == RESOURCE, "Register: resource_name 'nvidia.com/gpu'", req)
    check(req.HasField("options") and req.options.get_preferred_allocation_available
          and not req.options.pre_start_required,
          "Register: options {get_preferred_allocation_available: true}", req)
    check(err is None and opts is not None and opts.get_preferred_allocation_available
          and not opts.pre_start_required,
          "GetDevicePluginOptions during Register: the socket is served before Register", err)

    # ---- ListAndWatch -----------------------------------------------------------
    cl = Client(dp)
    stream, q = cl.watch()
    m = get(q, 5)
    want = [(U1, "Healthy", [1]), (U0, "Healthy", [0])]
    check(isinstance(m, api_pb2.ListAndWatchResponse) and devices(m) == want,
          "ListAndWatch: both fake GPUs by UUID, Healthy, NUMA 1 and 0 from the fake sysfs", m)

    # ---- Allocate ---------------------------------------------------------------------
    ctl = [("/dev/nvidiactl", "/dev/nvidiactl", "rw"), ("/dev/nvidia-uvm", "/dev/nvidia-uvm", "rw")]
    resp = cl.allocate([U0])
    c = resp.container_responses[0]
    check(len(resp.container_responses) == 1 and dict(c.envs) == {"NVIDIA_VISIBLE_DEVICES": U0},
          "Allocate one GPU: NVIDIA_VISIBLE_DEVICES is its UUID", resp)
    check(specs(c) == [("/dev/nvidia0", "/dev/nvidia0", "rw")] + ctl,
          "Allocate one GPU: /dev/nvidia0, nvidiactl, nvidia-uvm (rw), no missing nvidia-uvm-tools", resp)
    check(len(c.mounts) == 0 and len(c.annotations) == 0, "Allocate: no mounts, no annotations", resp)
    resp = cl.allocate([U1, U0], [U1])
    c0, c1 = resp.container_responses
    check(dict(c0.envs) == {"NVIDIA_VISIBLE_DEVICES": ",".join(sorted([U0, U1]))},
          "Allocate two GPUs: the UUIDs sorted", resp)
    check(specs(c0) == [("/dev/nvidia0", "/dev/nvidia0", "rw"), ("/dev/nvidia1", "/dev/nvidia1", "rw")] + ctl,
          "Allocate two GPUs: both nodes by minor, then the control nodes", resp)
    check(dict(c1.envs) == {"NVIDIA_VISIBLE_DEVICES": U1} and specs(c1)[0][0] == "/dev/nvidia1",
          "Allocate: one reply per container request", resp)
    e = rpc_error(lambda: cl.allocate([U0, "GPU-nope"]))
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and "unknown device ID 'GPU-nope'" in e.details(),
          "Allocate an unknown ID: INVALID_ARGUMENT naming it", e)

    # ---- GetPreferredAllocation --------------------------------------------------------
    # U1 is NVML's GPU 0 (first in the fake's file)
    check(cl.preferred([U0, U1], [], 1) == [U1], "GetPreferredAllocation: the lowest GPU index")
    check(cl.preferred([U0, U1], [U0], 1) == [U0], "GetPreferredAllocation: must-include first")
    check(cl.preferred([U1, U0], [U0], 2) == [U0, U1], "GetPreferredAllocation: must-include, then the rest")
    e = rpc_error(lambda: cl.preferred([U0, U1], [], 3))
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "GetPreferredAllocation of 3 out of 2: INVALID_ARGUMENT", e)
    pre = cl.unary("PreStartContainer", api_pb2.PreStartContainerRequest(devices_ids=[U0]),
                   api_pb2.PreStartContainerResponse)
    check(pre.ByteSize() == 0, "PreStartContainer: empty reply")

    # ---- XIDs ------------------------------------------------------------------------
    with open(conf, "a") as f:
        f.write(f"xid {U1} 43\n")
    m = get(q, 2.0)
    check(m is None, "an application XID (43) changes nothing on ListAndWatch", m)
    t0 = time.monotonic()
    with open(conf, "a") as f:
        f.write(f"xid {U1} 79\nlost {U1}\n")
    m = get(q, 5)
    dt = time.monotonic() - t0
    check(isinstance(m, api_pb2.ListAndWatchResponse)
          and devices(m) == [(U1, "Unhealthy", [1]), (U0, "Healthy", [0])],
          "a critical XID (79): its GPU is Unhealthy on the next ListAndWatch, the other Healthy", m)
    check(m is not None and dt < 1.0, f"the new list comes within a second ({dt * 1000:.0f} ms)")
    e = rpc_error(lambda: cl.allocate([U1]))
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and f"device '{U1}' is unhealthy" in e.details(),
          "Allocate an unhealthy GPU: INVALID_ARGUMENT naming it", e)
    m = get(q, 2.5)
    check(m is None and "still unusable: nvmlDeviceGetMemoryInfo: GPU is lost (15)" in plugin.stderr(),
          "a lost GPU stays Unhealthy across its rechecks (--health-recheck-sec 1), the reason logged", m)

    # ---- bench ----------------------------------------------------------------------------
    if args.bench:
        bench(cl, dp)

    # ---- kubelet restart: kubelet.sock removed and created again -------------------------
    reg.stop()
    time.sleep(0.3)
    t0 = time.monotonic()
    reg = RegistrationServer(dp)
    r = get(reg.registrations, 10)
    dt = time.monotonic() - t0
    check(r is not None and dt < 5.0 and r[1].resource_name == RESOURCE and r[3] is None,
          f"kubelet.sock created again: the plugin registers again within 5 s ({dt:.2f} s)", plugin.stderr())
    m = get(q, 0.5)
    check(m is None, "the open ListAndWatch stream survives a kubelet.sock restart", m)

    # ---- the plugin's own socket removed -------------------------------------------------
    t0 = time.monotonic()
    os.unlink(os.path.join(dp, SOCK))
    r = get(reg.registrations, 10)
    dt = time.monotonic() - t0
    check(r is not None and dt < 5.0 and r[3] is None and os.path.exists(os.path.join(dp, SOCK)),
          f"its socket removed: it serves again and registers again ({dt:.2f} s)", plugin.stderr())
    cl.close()
    cl = Client(dp)
    _, q2 = cl.watch()
    m = get(q2, 5)
    check(isinstance(m, api_pb2.ListAndWatchResponse) and devices(m)[0][1] == "Unhealthy",
          "the new server keeps the health state", m)
    m = get(q, 5)
    check(isinstance(m, grpc.RpcError), "the old ListAndWatch stream ended with the old server", m)
    t0 = time.monotonic()
    with open(conf, "a") as f:
        f.write(f"ok {U1}\n")
    m = get(q2, 5)
    dt = time.monotonic() - t0
    check(isinstance(m, api_pb2.ListAndWatchResponse)
          and devices(m) == [(U1, "Healthy", [1]), (U0, "Healthy", [0])],
          f"the GPU works again (NVML answers): Healthy again on ListAndWatch, nothing restarted ({dt:.1f} s)", m)
    check(len(cl.allocate([U1]).container_responses) == 1, "and Allocate gives it out again")

    # ---- SIGTERM ------------------------------------------------------------------------
    t0 = time.monotonic()
    rc = plugin.term()
    dt = time.monotonic() - t0
    check(rc == 0, f"SIGTERM: exit 0 ({dt:.2f} s)", plugin.stderr())
    check(not os.path.exists(os.path.join(dp, SOCK)), "SIGTERM: its socket is gone")
    cl.close()

    # ---- --replicas --------------------------------------------------------------------------
    # a fresh config: the fake returns every xid line of its file to a new plugin
    conf = os.path.join(tmp, "nvml2.conf")
    with open(conf, "w") as f:
        f.write(f"gpu {U1} 1 0000:AF:00.0 NVIDIA Fake H100\n")
        f.write(f"gpu {U0} 0 0000:3b:00.0 NVIDIA Fake H100\n")
    env = dict(env, FAKE_NVML_CONFIG=conf)
    plugin = Plugin(tmp, "replicas", dp, base + ["--replicas", "2", "--health-ignore-xids", "79",
                                                 "--health-recheck-sec", "0"], env)
    r = get(reg.registrations, 15)
    check(r is not None, "--replicas 2: registers", plugin.stderr())
    cl = Client(dp)
    _, q = cl.watch()
    m = get(q, 5)
    check(isinstance(m, api_pb2.ListAndWatchResponse) and [d[0] for d in devices(m)]
          == [U1 + "::0", U1 + "::1", U0 + "::0", U0 + "::1"],
          "--replicas 2: each GPU advertised as <uuid>::0 and ::1", m)
    resp = cl.allocate([U0 + "::1", U0 + "::0"])
    c = resp.container_responses[0]
    check(dict(c.envs) == {"NVIDIA_VISIBLE_DEVICES": U0} and specs(c)[0] == ("/dev/nvidia0", "/dev/nvidia0", "rw")
          and len(specs(c)) == 3, "--replicas 2: two replicas of one GPU give its UUID and node once", resp)
    check(cl.preferred([U1 + "::0", U0 + "::1", U1 + "::1"], [U1 + "::1"], 2) == [U1 + "::1", U1 + "::0"],
          "--replicas 2: GetPreferredAllocation prefers replicas of the must-include GPU")
    e = rpc_error(lambda: cl.allocate([U0]))
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "--replicas 2: a bare UUID is unknown", e)
    with open(conf, "a") as f:
        f.write(f"xid {U0} 79\n")
    m = get(q, 2.5)
    check(m is None, "--health-ignore-xids 79: XID 79 changes nothing", m)
    with open(conf, "a") as f:
        f.write(f"xid {U0} 13\n")
    m = get(q, 5)
    check(isinstance(m, api_pb2.ListAndWatchResponse) and [d.health for d in m.devices]
          == ["Healthy", "Healthy", "Unhealthy", "Unhealthy"],
          "--health-ignore-xids 79: XID 13 counts; both replicas of its GPU Unhealthy", m)
    with open(conf, "a") as f:
        f.write("xid GPU-not-known-to-nvml 48\n")
    m = get(q, 5)
    check(isinstance(m, api_pb2.ListAndWatchResponse) and len(m.devices) == 4
          and all(d.health == "Unhealthy" for d in m.devices),
          "a critical XID on a device NVML cannot name: every replica of every GPU Unhealthy", m)
    check(plugin.term() == 0, "--replicas 2: SIGTERM, exit 0")
    cl.close()

    # ---- failure paths ---------------------------------------------------------------------
    missing = os.path.join(tmp, "no-such", "libnvidia-ml.so.1")
    p = Plugin(tmp, "no-nvml", dp, ["--nvml-library", missing, "--dev-root", dev], env)
    rc = p.proc.wait(timeout=15)
    out = p.stderr().strip().splitlines()
    check(rc == 1, "without NVML: exit 1", p.stderr())
    check(len(out) == 1 and missing in out[0] and "cannot open shared object file" in out[0],
          "without NVML: one line naming the library and dlerror()", p.stderr())

    p = Plugin(tmp, "init-fail", dp, base, dict(env, FAKE_NVML_INIT_FAIL="9"))
    rc = p.proc.wait(timeout=15)
    out = p.stderr().strip().splitlines()
    check(rc == 1 and len(out) == 1 and "nvmlInit_v2: Driver Not Loaded (9)" in out[0],
          "nvmlInit_v2 failing: exit 1, one line with NVML's error string", p.stderr())

    empty = os.path.join(tmp, "empty.conf")
    open(empty, "w").close()
    p = Plugin(tmp, "no-gpus", dp, base, dict(env, FAKE_NVML_CONFIG=empty))
    rc = p.proc.wait(timeout=15)
    out = p.stderr().strip().splitlines()
    check(rc == 1 and len(out) == 1 and "found no GPUs" in out[0], "zero GPUs: exit 1, one line", p.stderr())

    p = Plugin(tmp, "no-fail", dp, ["--nvml-library", missing, "--fail-on-init-error=false", "--dev-root", dev],
               dict(env, CUBELET_GPU_RETRY_SEC="1"))
    r = get(reg.registrations, 15)
    check(r is not None and r[1].resource_name == RESOURCE and r[3] is None,
          "--fail-on-init-error=false without NVML: still serves and registers", p.stderr())
    cl = Client(dp)
    _, q = cl.watch()
    m = get(q, 5)
    check(isinstance(m, api_pb2.ListAndWatchResponse) and len(m.devices) == 0,
          "--fail-on-init-error=false without NVML: ListAndWatch advertises zero devices", m)
    time.sleep(2.5)
    errs = [ln for ln in p.stderr().splitlines() if missing in ln]
    check(len(errs) == 1, "--fail-on-init-error=false: the NVML error is logged once across retries",
          p.stderr())
    check(p.term() == 0, "--fail-on-init-error=false: SIGTERM, exit 0")
    cl.close()

    p = Plugin(tmp, "no-events", dp, base, dict(env, FAKE_NVML_NO_EVENTS="1", FAKE_NVML_MIG="1"))
    r = get(reg.registrations, 15)
    warn = [ln for ln in p.stderr().splitlines() if "health checks are off" in ln]
    check(r is not None and len(warn) == 1 and "nvmlEventSetCreate: Not Supported" in warn[0],
          "without the event API: one warning, health checking off, still registers", p.stderr())
    mig = [ln for ln in p.stderr().splitlines() if "has MIG enabled" in ln]
    check(len(mig) == 2 and "the whole GPU" in mig[0], "MIG enabled: logged per GPU, the whole GPU advertised",
          p.stderr())
    check(p.term() == 0, "without the event API: SIGTERM, exit 0")
    reg.stop()


def bench(cl, dp):
    n = 1000
    req = api_pb2.AllocateRequest(container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=[U0])])
    call = cl.ch.unary_unary("/v1beta1.DevicePlugin/Allocate", request_serializer=ser,
                             response_deserializer=api_pb2.AllocateResponse.FromString)
    for _ in range(50):
        call(req, timeout=5)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call(req, timeout=5)
        times.append(time.perf_counter() - t)
    times.sort()
    with grpc.insecure_channel("unix:" + os.path.join(dp, "kubelet.sock")) as ch:
        ping = ch.unary_unary("/v1beta1.Registration/Ping", request_serializer=ser,
                              response_deserializer=api_pb2.Empty.FromString)
        for _ in range(50):
            ping(api_pb2.Empty(), timeout=5)
        base = []
        for _ in range(n):
            t = time.perf_counter()
            ping(api_pb2.Empty(), timeout=5)
            base.append(time.perf_counter() - t)
    base.sort()
    print(f"# bench: Allocate (1 GPU) round trip, {n} calls: p50 {percentile(times, 50) * 1e6:.0f} us, "
          f"p99 {percentile(times, 99) * 1e6:.0f} us", flush=True)
    print(f"# bench: baseline, empty unary to a Python grpcio server, {n} calls: "
          f"p50 {percentile(base, 50) * 1e6:.0f} us, p99 {percentile(base, 99) * 1e6:.0f} us", flush=True)


try:
    main()
except Exception as exc:  # a crash is one failed check, not a silent pass
    import traceback
    check(False, f"the test ran to its end ({exc!r})", traceback.format_exc())
done()
