# SPDX-License-Identifier: Apache-2.0
"""`cubelet devices` (the deviceplugin/ device manager) against a grpcio
device plugin: the plugin's half of the v1beta1 API in Python, the kubelet's
half in C.

Run by tests/interop/run-device-manager.sh, which generates api_pb2 with
protoc. Prints TAP: one line per exact check, and the registration →
allocatable time as a comment.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

ap = argparse.ArgumentParser()
ap.add_argument("--cubelet", required=True)
ap.add_argument("--pb", required=True)
ap.add_argument("--tmp", required=True)
args = ap.parse_args()
sys.path.insert(0, args.pb)
from proto.deviceplugin import api_pb2  # noqa: E402
from tap import check, done  # noqa: E402

RESOURCE = "example.com/foo"
SOCK = "dm-foo.sock"
DEVICES = [("foo-0", 0), ("foo-1", 1), ("foo-2", 1)]
PREFERRED = ["foo-0", "foo-2"]  # the own choice would be foo-1, foo-2 (one NUMA node)



class Plugin:
    """A device plugin serving RESOURCE with three devices."""

    def __init__(self, d):
        self.d = d
        self.requests = []  # (method, request)
        self.change = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        h = {
            "GetDevicePluginOptions": grpc.unary_unary_rpc_method_handler(
                self.options, api_pb2.Empty.FromString, api_pb2.DevicePluginOptions.SerializeToString),
            "ListAndWatch": grpc.unary_stream_rpc_method_handler(
                self.list_and_watch, api_pb2.Empty.FromString, api_pb2.ListAndWatchResponse.SerializeToString),
            "GetPreferredAllocation": grpc.unary_unary_rpc_method_handler(
                self.preferred, api_pb2.PreferredAllocationRequest.FromString,
                api_pb2.PreferredAllocationResponse.SerializeToString),
            "Allocate": grpc.unary_unary_rpc_method_handler(
                self.allocate, api_pb2.AllocateRequest.FromString, api_pb2.AllocateResponse.SerializeToString),
            "PreStartContainer": grpc.unary_unary_rpc_method_handler(
                self.pre_start, api_pb2.PreStartContainerRequest.FromString,
                api_pb2.PreStartContainerResponse.SerializeToString),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("v1beta1.DevicePlugin", h),))
        self.server.add_insecure_port("unix:" + os.path.join(d, SOCK))
        self.server.start()

    def stop(self):
        self.server.stop(0)

    def options(self, req, ctx):
        self.requests.append(("GetDevicePluginOptions", req))
        return api_pb2.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)

    @staticmethod
    def snapshot(unhealthy=()):
        return api_pb2.ListAndWatchResponse(devices=[
            api_pb2.Device(ID=i, health="Unhealthy" if i in unhealthy else "Healthy",
                           topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n)]))
            for i, n in DEVICES])

    def list_and_watch(self, req, ctx):
        self.requests.append(("ListAndWatch", req))
        yield self.snapshot()
        while ctx.is_active():
            if self.change.wait(0.05):
                self.change.clear()
                yield self.snapshot(unhealthy=("foo-1",))

    def preferred(self, req, ctx):
        self.requests.append(("GetPreferredAllocation", req))
        return api_pb2.PreferredAllocationResponse(container_responses=[
            api_pb2.ContainerPreferredAllocationResponse(deviceIDs=PREFERRED)])

    def allocate(self, req, ctx):
        self.requests.append(("Allocate", req))
        out = []
        for c in req.container_requests:
            ids = ",".join(sorted(c.devices_ids))
            out.append(api_pb2.ContainerAllocateResponse(
                envs={"FOO_VISIBLE_DEVICES": ids},
                mounts=[api_pb2.Mount(container_path="/opt/foo", host_path="/var/lib/foo", read_only=True)],
                devices=[api_pb2.DeviceSpec(container_path="/dev/" + i.replace("-", ""),
                                            host_path="/dev/" + i.replace("-", ""), permissions="rw")
                         for i in sorted(c.devices_ids)],
                annotations={"example.com/foo-ids": ids}))
        return api_pb2.AllocateResponse(container_responses=out)

    def pre_start(self, req, ctx):
        self.requests.append(("PreStartContainer", req))
        return api_pb2.PreStartContainerResponse()


def wait_for(path, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def register(d, version="v1beta1", resource=RESOURCE, endpoint=SOCK):
    """Registers; returns (t0, None) or (t0, grpc.RpcError)."""
    with grpc.insecure_channel("unix:" + os.path.join(d, "kubelet.sock")) as ch:
        call = ch.unary_unary("/v1beta1.Registration/Register",
                              request_serializer=api_pb2.RegisterRequest.SerializeToString,
                              response_deserializer=api_pb2.Empty.FromString)
        t0 = time.monotonic()
        try:
            call(api_pb2.RegisterRequest(version=version, endpoint=endpoint, resource_name=resource,
                                         options=api_pb2.DevicePluginOptions(get_preferred_allocation_available=True)),
                 timeout=5, wait_for_ready=True)
            return t0, None
        except grpc.RpcError as e:
            return t0, e


def run_cubelet(d, *extra):
    return subprocess.Popen([args.cubelet, "devices", "--device-plugin-dir", d, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def scenario_allocate():
    d = os.path.join(args.tmp, "alloc")
    os.makedirs(d)
    cp = os.path.join(d, "kubelet_internal_checkpoint")
    with open(cp, "w") as f:
        f.write('{"Data":{},"Checksum":1}')
    with open(os.path.join(d, "other-file"), "w") as f:
        f.write("stays")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(os.path.join(d, "stale.sock"))
    stale.close()

    p = run_cubelet(d, "--wait", "10", "--allocate", RESOURCE + "=2")
    check(wait_for(os.path.join(d, "kubelet.sock")), "cubelet devices creates kubelet.sock")
    check(not os.path.exists(os.path.join(d, "stale.sock")), "a stale socket in the directory is removed")
    plugin = Plugin(d)
    t0, e = register(d)
    check(e is None, "Register of example.com/foo is accepted", e)
    out, err = p.communicate(timeout=20)
    plugin.stop()
    check(p.returncode == 0, "cubelet devices --allocate exits 0", err)
    want = {
        "resources": [{"name": RESOURCE, "endpoint": SOCK, "devices": [
            {"id": "foo-0", "health": "Healthy", "numa": [0]},
            {"id": "foo-1", "health": "Healthy", "numa": [1]},
            {"id": "foo-2", "health": "Healthy", "numa": [1]}]}],
        "allocations": [{"resource": RESOURCE, "deviceIDs": PREFERRED, "response": {
            "envs": {"FOO_VISIBLE_DEVICES": "foo-0,foo-2"},
            "mounts": [{"containerPath": "/opt/foo", "hostPath": "/var/lib/foo", "readOnly": True}],
            "devices": [{"containerPath": "/dev/foo0", "hostPath": "/dev/foo0", "permissions": "rw"},
                        {"containerPath": "/dev/foo2", "hostPath": "/dev/foo2", "permissions": "rw"}],
            "annotations": {"example.com/foo-ids": "foo-0,foo-2"}}}],
    }
    try:
        got = json.loads(out)
    except ValueError as x:
        got = {"unparsable": str(x), "text": out}
    check(got == want, "the report: devices, health, NUMA, and the allocation with the plugin's response",
          json.dumps(got, indent=1) + "\nstderr: " + err)
    methods = [m for m, _ in plugin.requests]
    check(methods[:2] == ["GetDevicePluginOptions", "ListAndWatch"],
          "the plugin is asked GetDevicePluginOptions, then ListAndWatch", methods)
    pref = [r for m, r in plugin.requests if m == "GetPreferredAllocation"]
    check(len(pref) == 1 and len(pref[0].container_requests) == 1
          and sorted(pref[0].container_requests[0].available_deviceIDs) == ["foo-0", "foo-1", "foo-2"]
          and list(pref[0].container_requests[0].must_include_deviceIDs) == []
          and pref[0].container_requests[0].allocation_size == 2,
          "GetPreferredAllocation: one container, 3 available, none must-include, size 2", pref)
    alloc = [r for m, r in plugin.requests if m == "Allocate"]
    check(len(alloc) == 1 and len(alloc[0].container_requests) == 1
          and sorted(alloc[0].container_requests[0].devices_ids) == PREFERRED,
          "Allocate: one call, one container, exactly the preferred 2 IDs", alloc)
    check("PreStartContainer" not in methods, "no PreStartContainer (the plugin does not ask for it)", methods)
    with open(cp) as f:
        check(f.read() == '{"Data":{},"Checksum":1}', "the checkpoint is left as it was")
    check(not os.path.exists(cp + ".corrupt"), "no .corrupt file beside it (read-only)")
    with open(os.path.join(d, "other-file")) as f:
        check(f.read() == "stays", "other files in the directory stay")
    m = re.search(r"allocatable ([0-9.]+) ms after Register", err)
    check(m is not None, "cubelet devices reports the registration → allocatable time", err)
    if m:
        print(f"# registration -> allocatable (C side, Register handler -> dispatch): {m.group(1)} ms", flush=True)
    print(f"# Register call -> cubelet exit (Python side): {(time.monotonic() - t0) * 1000:.1f} ms", flush=True)


def scenario_refusals():
    d = os.path.join(args.tmp, "refuse")
    os.makedirs(d)
    p = run_cubelet(d, "--wait", "4")
    check(wait_for(os.path.join(d, "kubelet.sock")), "cubelet devices (no --allocate) creates kubelet.sock")
    plugin = Plugin(d)
    _, e = register(d, version="v1alpha")
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and e.details() == "version 'v1alpha' is not supported (v1beta1)",
          "Register with version v1alpha: INVALID_ARGUMENT, \"version 'v1alpha' is not supported (v1beta1)\"",
          e and (e.code(), e.details()))
    _, e = register(d, resource="kubernetes.io/foo")
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and e.details().startswith('the ResourceName "kubernetes.io/foo" is invalid'),
          "Register of kubernetes.io/foo: INVALID_ARGUMENT, 'the ResourceName \"kubernetes.io/foo\" is invalid...'",
          e and (e.code(), e.details()))
    _, e = register(d, endpoint="missing.sock")
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and os.path.join(d, "missing.sock") in e.details(),
          "Register with a missing endpoint socket: INVALID_ARGUMENT naming the path",
          e and (e.code(), e.details()))
    _, e = register(d)
    check(e is None, "then a valid Register is accepted", e)
    # the second snapshot: foo-1 turns unhealthy
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and "ListAndWatch" not in [m for m, _ in plugin.requests]:
        time.sleep(0.01)
    time.sleep(0.2)
    plugin.change.set()
    out, err = p.communicate(timeout=20)
    plugin.stop()
    check(p.returncode == 0, "cubelet devices exits 0", err)
    try:
        got = json.loads(out)
    except ValueError:
        got = {}
    health = [(x["id"], x["health"]) for r in got.get("resources", []) for x in r["devices"]]
    check(health == [("foo-0", "Healthy"), ("foo-1", "Unhealthy"), ("foo-2", "Healthy")]
          and got.get("allocations") == [],
          "a changed ListAndWatch snapshot (foo-1 Unhealthy) is what the report shows", out + err)


def scenario_live():
    d = os.path.join(args.tmp, "live")
    os.makedirs(d)
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(d, "kubelet.sock"))
    s.listen(4)
    p = run_cubelet(d, "--wait", "1")
    out, err = p.communicate(timeout=10)
    s.close()
    check(p.returncode == 2, "a live kubelet.sock: cubelet devices exits 2", (p.returncode, err))
    check(err.strip() == f"cubelet devices: {d}/kubelet.sock is live (a kubelet or cubelet is serving it); "
          "stop it first", "...with the message naming the socket", err)
    check(os.path.exists(os.path.join(d, "kubelet.sock")), "...and leaves the live socket alone")


def scenario_unsatisfied():
    d = os.path.join(args.tmp, "short")
    os.makedirs(d)
    p = run_cubelet(d, "--wait", "3", "--allocate", RESOURCE + "=4")
    wait_for(os.path.join(d, "kubelet.sock"))
    plugin = Plugin(d)
    register(d)
    out, err = p.communicate(timeout=20)
    plugin.stop()
    check(p.returncode == 1 and "Requested number of devices unavailable for example.com/foo. Requested: 4, "
          "Available: 3" in err, "--allocate example.com/foo=4 of 3: exit 1 with kubelet's message",
          (p.returncode, err))


scenario_allocate()
scenario_refusals()
scenario_live()
scenario_unsatisfied()
done()
