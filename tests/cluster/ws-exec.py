#!/usr/bin/python3
"""A WebSocket client of the kubelet server's /exec, as kubectl 1.31+ speaks
to a kubelet directly: v5.channel.k8s.io or v4 offered (containerd 1.6's
streaming server answers v4), each binary message's first byte a channel
(1 stdout, 2 stderr, 3 the status), over TLS with a client certificate. Prints the negotiated
protocol, then each channel's bytes, then the status document's status.
Standard library only (the test peer is not cubelet's code).

  ws-exec.py URL CA CERT KEY       (URL: https://127.0.0.1:10250/exec/...)
"""
import base64
import os
import socket
import ssl
import struct
import sys
import urllib.parse


def frames(sock):
    buf = b""

    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError
            buf += chunk
        out, buf = buf[:n], buf[n:]
        return out

    while True:
        try:
            b0, b1 = need(2)
        except EOFError:
            return
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", need(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", need(8))[0]
        mask = need(4) if b1 & 0x80 else None
        data = need(n)
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        opcode = b0 & 0x0F
        if opcode == 8:
            return
        yield opcode, data


def main():
    url, ca, cert, key = sys.argv[1:5]
    u = urllib.parse.urlsplit(url)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    raw = socket.create_connection((u.hostname, u.port), timeout=30)
    sock = ctx.wrap_socket(raw, server_hostname=u.hostname)
    wskey = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {wskey}\r\nSec-WebSocket-Version: 13\r\n"
                  "Sec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            break
        head += chunk
    lines = head.decode(errors="replace").split("\r\n")
    status = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "?"
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    print("status", status, "protocol", headers.get("sec-websocket-protocol", "-"))
    if status != "101":
        return 1
    out = {}
    for opcode, data in frames(sock):
        if opcode == 2 and data:
            out.setdefault(data[0], b"")
            out[data[0]] += data[1:]
    for ch in sorted(out):
        print("channel", ch, out[ch].decode(errors="replace").strip())
    return 0


sys.exit(main())
