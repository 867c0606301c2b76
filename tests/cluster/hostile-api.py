#!/usr/bin/python3
# A hostile Kubernetes API server for tests/cluster/run-hostile.sh: HTTPS on
# 127.0.0.1, the few paths a node uses (Node, Lease, pods list and watch,
# pod status, events), each answering as the mode file says at the time of
# the request (words "key=value", read on every request):
#
#   nodes=429     POST /api/v1/nodes: 429 with Retry-After: 3
#   list=garbage  the pods list: 200 with a body that is not JSON
#   list=500      the pods list: 500 with a Status
#   list=big      the pods list: one pod with a 3 MiB annotation
#   watch=cut     a watch: half an event, then the connection closed
#   watch=short   a watch: closed at once, nothing sent
#   (otherwise)   Node and Lease accepted, an empty list, a watch that sends
#                 the pod "late" once, then stays open
#
# Every request is logged to the log file as one JSON line
# {"t": seconds since the epoch, "method", "path", "status"}.
#
#   hostile-api.py PORT CERT KEY MODE_FILE LOG_FILE
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CERT, KEY, MODE_FILE, LOG_FILE = sys.argv[1:6]
LOCK = threading.Lock()


def mode():
    try:
        with open(MODE_FILE) as f:
            return dict(w.split("=", 1) for w in f.read().split() if "=" in w)
    except OSError:
        return {}


def log(method, path, status):
    with LOCK, open(LOG_FILE, "a") as f:
        f.write(json.dumps({"t": time.time(), "method": method, "path": path, "status": status}) + "\n")


def pod(name, uid, node, annotations=None):
    meta = {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "7"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [
                {"name": "app", "image": "localhost/cubelet/busybox:1", "command": ["sleep", "3600"]}]}}


def status_doc(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        try:
            return json.loads(data) if data else {}
        except ValueError:
            return {}

    def send(self, code, doc=None, raw=None, headers=()):
        data = raw if raw is not None else json.dumps(doc if doc is not None else {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        log(self.command, self.path, code)

    def node_name(self):
        return self.path.split("?")[0].split("/")[4]

    def handle_any(self):
        m, path = mode(), self.path
        body = self.body() if self.command in ("POST", "PUT", "PATCH") else {}
        if path == "/api/v1/nodes" and self.command == "POST":
            if m.get("nodes") == "429":
                return self.send(429, status_doc(429, "TooManyRequests", "too many requests, slow down"),
                                 headers=[("Retry-After", "3")])
            body.setdefault("metadata", {})["uid"] = "node-uid-1"
            return self.send(201, body)
        if path.startswith("/api/v1/nodes/"):
            name = self.node_name()
            return self.send(200, {"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": name, "uid": "node-uid-1", "resourceVersion": "3"}})
        if "/leases" in path:
            doc = body or {"metadata": {"name": path.split("/")[-1]}}
            doc.setdefault("metadata", {})["resourceVersion"] = "5"
            return self.send(201 if self.command == "POST" else 200, doc)
        if path.startswith("/api/v1/pods?") and "watch=true" not in path:
            node = path.split("spec.nodeName%3D")[1].split("&")[0]
            if m.get("list") == "garbage":
                return self.send(200, raw=b'{"kind": "PodList", "items": [ {not json')
            if m.get("list") == "500":
                return self.send(500, status_doc(500, "InternalError", "etcdserver: request timed out"))
            items = []
            if m.get("list") == "big":
                items.append(pod("big", "uid-big", node, {"example.com/blob": "x" * (3 << 20)}))
            return self.send(200, {"kind": "PodList", "apiVersion": "v1",
                                   "metadata": {"resourceVersion": "7"}, "items": items})
        if path.startswith("/api/v1/pods?"):
            return self.watch(m, path)
        if "/events" in path or path.endswith("/status"):
            return self.send(201 if self.command == "POST" else 200, body)
        return self.send(404, status_doc(404, "NotFound", "the server could not find the requested resource"))

    def watch(self, m, path):
        node = path.split("spec.nodeName%3D")[1].split("&")[0]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        log(self.command, path, 200)
        if m.get("watch") == "short":
            self.close_connection = True
            return
        line = json.dumps({"type": "ADDED", "object": pod("late", "uid-late", node)})
        if m.get("watch") == "cut":
            self.wfile.write(line[: len(line) // 2].encode())
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write((line + "\n").encode())
        self.wfile.flush()
        for _ in range(60):
            time.sleep(0.5)
            if mode().get("watch") in ("cut", "short"):
                break
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", int(PORT)), Handler)
srv.daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
