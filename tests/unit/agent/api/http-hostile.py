#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile clients of cubelet's HTTP API, tried the way a new user would:
CONNS connections from 127.0.0.1 trickle a request header a byte every 2-3 s
(over TLS: they send nothing, half a ClientHello, or the ClientHello a byte
every 2-3 s), in WAVES waves, while /healthz, /readyz and /metrics are asked
from a fresh connection every 0.5 s. Fails when an answer took 1 s (--slow) or more or
never came, when the median answer took MEDIAN s (--median) or more, or when a hostile connection was still open DEADLINE + 2 s after
it was made. Debian's python3, standard library only.

  http-hostile.py --plain PORT [--tls PORT --ca CA [--cert PEM --key PEM]]
  http-hostile.py --plain 10255                # against a running cubelet
  http-hostile.py --tls 10250 --ca CA --cert PEM --key PEM --paths /healthz --status 500
                                               # its kubelet server (tests/cluster/run-node.sh)

Run by tests/unit/agent/api/test-http-hostile.c (make test), which serves
both ports from agent/api/http.c. Raises its soft ulimit -n to the hard one.
Prints "#" lines (TAP comments); exits 1 on a failed check, 77 when the hard
ulimit -n is too low to try."""
import argparse
import errno
import heapq
import http.client
import random
import resource
import selectors
import socket
import ssl
import sys
import threading
import time

HOST = "127.0.0.1"
PATHS = ["/healthz", "/readyz", "/metrics"]
WANT = 200  # the probes' status (--status)
SLOW = 1.0  # an answer this late (s) fails (--slow)
MEDIAN = None  # a median answer this late (s) fails (--median)


# A wave's burst of connects and a probe never overlap: a good client that
# connects at the instant a thousand silent ones arrive from its own address,
# and has not yet sent a byte when the table is full, is one of equals and
# may make room (agent/api/conns.h says what cannot be told apart). In one
# process the burst also held the GIL between a probe's connect and its
# ClientHello: a clean-clone CI's probe at 0.0 s was dropped 13 ms after its
# connect. Once a burst is over, no hostile connection is new, and a probe
# that has sent its request is never the one that makes room.
OPENING = threading.Lock()


def say(text):
    print(f"# {text}", flush=True)


class Hostile:
    """CONNS sockets of one wave: connected at once, then each sends its
    payload's first BURST bytes and then a byte every 2-3 s (or nothing when
    trickle is False). Records when the server closed each one."""

    def __init__(self, port, payload, burst, trickle):
        self.port, self.payload, self.burst, self.trickle = port, payload, burst, trickle
        self.opened = []  # (socket, made at)
        self.closed = {}  # id(socket) -> seconds after it was made
        self.refused_connect = 0


class Trickler(threading.Thread):
    """One thread, one selector, for every wave of one scenario."""

    def __init__(self, name):
        super().__init__(name=name, daemon=True)
        self.sel = selectors.DefaultSelector()
        self.heap = []  # (next send, seq, wave, sock, made at, bytes sent)
        self.seq = 0
        self.lock = threading.Lock()
        self.stop = False

    def open_waves(self, waves):
        """Connects every socket of WAVES ((wave, n), ...), interleaved, then
        hands them to the thread at once."""
        made = []
        for i in range(max(n for _, n in waves)):
            for wave, n in waves:
                if i >= n:
                    continue
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                t = time.monotonic()
                rc = s.connect_ex((HOST, wave.port))
                if rc not in (0, errno.EINPROGRESS):
                    wave.refused_connect += 1
                    s.close()
                    continue
                wave.opened.append((s, t))
                made.append((wave, s, t))
        with self.lock:
            for wave, s, t in made:
                self.sel.register(s, selectors.EVENT_READ, (wave, t))
                self.seq += 1
                # the first bytes right away (once connected), then one every 2-3 s
                heapq.heappush(self.heap, (t + 0.05, self.seq, wave, s, t, 0))

    def _closed(self, s, wave, made, now):
        if id(s) in wave.closed:
            return
        wave.closed[id(s)] = now - made
        self.sel.unregister(s)

    def run(self):
        while not self.stop:
            with self.lock:
                timeout = 0.1
                if self.heap:
                    timeout = max(0.0, min(timeout, self.heap[0][0] - time.monotonic()))
                events = self.sel.select(timeout)
                now = time.monotonic()
                for key, _ in events:
                    wave, made = key.data
                    try:
                        if key.fileobj.recv(4096) == b"":
                            self._closed(key.fileobj, wave, made, now)
                    except BlockingIOError:
                        pass
                    except OSError:
                        self._closed(key.fileobj, wave, made, now)
                while self.heap and self.heap[0][0] <= now:
                    _, seq, wave, s, made, sent = heapq.heappop(self.heap)
                    if id(s) in wave.closed:
                        continue
                    n = wave.burst if sent == 0 and wave.burst else (1 if wave.trickle else 0)
                    if n and sent < len(wave.payload):
                        try:
                            sent += s.send(wave.payload[sent:sent + n])
                        except BlockingIOError:
                            pass
                        except OSError as e:
                            if e.errno != errno.ENOTCONN:  # still connecting: next time
                                self._closed(s, wave, made, now)
                                continue
                    if wave.trickle or (wave.burst and sent == 0):  # (a retry when not connected yet)
                        heapq.heappush(self.heap, (now + random.uniform(2.0, 3.0), seq, wave, s, made, sent))


def probe(port, ctx, path):
    """Seconds until a fresh connection's GET was answered, and its status
    (or the error)."""
    t = time.monotonic()
    try:
        if ctx:
            c = http.client.HTTPSConnection(HOST, port, timeout=5, context=ctx)
        else:
            c = http.client.HTTPConnection(HOST, port, timeout=5)
        c.request("GET", path, headers={"Connection": "close"})
        r = c.getresponse()
        r.read()
        c.close()
        return time.monotonic() - t, r.status
    except (OSError, http.client.HTTPException) as e:
        return time.monotonic() - t, f"{type(e).__name__}: {e}"


class Prober(threading.Thread):
    def __init__(self, name, port, ctx, seconds):
        super().__init__(name=name, daemon=True)
        self.port, self.ctx, self.seconds = port, ctx, seconds
        self.results = {p: [] for p in PATHS}  # (at, latency, status)

    def run(self):
        t0 = time.monotonic()
        k = 0
        while True:
            at = t0 + k * 0.5
            if at - t0 > self.seconds:
                return
            time.sleep(max(0.0, at - time.monotonic()))
            for p in PATHS:
                with OPENING:
                    lat, status = probe(self.port, self.ctx, p)
                self.results[p].append((time.monotonic() - t0, lat, status))
            k = max(k + 1, int((time.monotonic() - t0) / 0.5) + 1)


def client_hello():
    """The ClientHello python's ssl would send (a few hundred bytes)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=HOST)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def scenario(name, port, ctx, waves, conns, seconds, deadline):
    tr = Trickler(f"{name}-trickle")
    pr = Prober(f"{name}-probe", port, ctx, seconds)
    all_waves = []
    if ctx:
        hello = client_hello()
        kinds = [("silent", b"", 0, False), ("half a ClientHello", hello, len(hello) // 2, False),
                 ("a ClientHello byte every 2-3 s", hello, 0, True)]
    else:
        req = (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: trickle\r\n"
               b"X-Padding: " + b"a" * 200 + b"\r\n\r\n")
        kinds = [("a header byte every 2-3 s", req, 0, True)]
    spacing = seconds / waves
    tr.start()
    pr.start()
    t0 = time.monotonic()
    for w in range(waves):
        time.sleep(max(0.0, t0 + w * spacing - time.monotonic()))
        batch = []
        for i, (kind, payload, burst, trickle) in enumerate(kinds):
            wave = Hostile(port, payload, burst, trickle)
            wave.kind, wave.at = kind, time.monotonic() - t0
            batch.append((wave, conns // len(kinds) + (1 if i < conns % len(kinds) else 0)))
            all_waves.append(wave)
        with OPENING:
            tr.open_waves(batch)
    pr.join()
    # every wave watched until DEADLINE + 2 s after it was opened
    last = max(w.at for w in all_waves)
    time.sleep(max(0.0, t0 + last + deadline + 2.2 - time.monotonic()))
    tr.stop = True
    tr.join()
    for w in all_waves:
        for s, _ in w.opened:
            s.close()
    return pr, all_waves


def report(name, pr, waves, deadline):
    ok = True
    for p, rs in pr.results.items():
        lats = sorted(r[1] for r in rs if r[2] == WANT)
        failed = sum(1 for r in rs if r[2] != WANT)
        slow = sum(1 for r in rs if r[2] == WANT and r[1] >= SLOW)
        bad = [r for r in rs if r[2] != WANT or r[1] >= SLOW]
        say(f"{name} {p}: {len(rs)} asked, {len(lats)} answered {WANT}"
            + (f" (max {lats[-1] * 1000:.0f} ms, median {lats[len(lats) // 2] * 1000:.0f} ms)" if lats else "")
            + f", {failed} refused or failed, {slow} took {SLOW:g} s or more")
        # the failures, else the slowest answers over 100 ms
        slowest = sorted((r for r in rs if r[2] == WANT and r[1] >= 0.1), key=lambda r: -r[1])
        for at, lat, status in (bad or slowest)[:5]:
            say(f"    at {at:5.1f} s: {status} after {lat * 1000:.0f} ms")
        if MEDIAN is not None and lats and lats[len(lats) // 2] >= MEDIAN:
            say(f"{name} {p}: the median answer took {MEDIAN:g} s or more")
            ok = False
        ok = ok and not bad and bool(rs)
    for w in waves:
        life = [w.closed.get(id(s)) for s, _ in w.opened]
        shut = sorted(x for x in life if x is not None)
        open_ = sum(1 for x in life if x is None)
        late = [x for x in shut if x > deadline + 2]
        at_once = sum(1 for x in shut if x < 1)
        at_deadline = [x for x in shut if deadline - 1 <= x]
        say(f"{name} wave at {w.at:4.1f} s, {len(w.opened)} connections ({w.kind}) closed: "
            f"{at_once} at once (< 1 s), {len(shut) - at_once - len(at_deadline)} at 1-{deadline - 1:.0f} s, "
            f"{len(at_deadline)} at {min(at_deadline, default=0):.1f}-{max(at_deadline, default=0):.1f} s; "
            f"{open_} still open at {deadline + 2:.0f} s" + (f", {len(late)} closed late" if late else "")
            + (f", {w.refused_connect} connect() refused" if w.refused_connect else ""))
        ok = ok and not open_ and not late
    return ok


def main():
    global WANT, SLOW
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plain", type=int, help="the HTTP port")
    ap.add_argument("--tls", type=int, help="the HTTPS port")
    ap.add_argument("--ca", help="the server's CA (PEM)")
    ap.add_argument("--cert", help="a client certificate (PEM)")
    ap.add_argument("--key", help="its key (PEM)")
    ap.add_argument("--conns", type=int, default=1000, help="hostile connections per wave")
    ap.add_argument("--waves", type=int, default=2, help="waves of them over --seconds (HTTP)")
    ap.add_argument("--seconds", type=float, default=25, help="how long /healthz & co. are asked (HTTP)")
    ap.add_argument("--tls-seconds", type=float, default=13, help="the same over TLS (one wave)")
    ap.add_argument("--deadline", type=float, default=10, help="the server's header deadline (s)")
    ap.add_argument("--paths", default=",".join(PATHS), help="the paths probed meanwhile, comma-separated")
    ap.add_argument("--status", type=int, default=WANT, help="the status each probe must get")
    ap.add_argument("--slow", type=float, default=SLOW, help="an answer this late (s) fails")
    ap.add_argument("--median", type=float, default=None, help="a median answer this late (s) fails")
    a = ap.parse_args()
    PATHS[:] = a.paths.split(",")
    WANT, SLOW, MEDIAN = a.status, a.slow, a.median
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < 2 * a.conns + 64:
        say(f"skipped: the hard ulimit -n is {hard}, too low for {a.conns} connections a scenario")
        return 77
    runs = []
    if a.plain:
        runs.append(("http", a.plain, None, a.waves, a.seconds))
    if a.tls:
        ctx = ssl.create_default_context(cafile=a.ca)
        if a.cert:
            ctx.load_cert_chain(a.cert, a.key)
        runs.append(("https", a.tls, ctx, 1, a.tls_seconds))
    if not runs:
        ap.error("--plain or --tls")
    # the scenarios run side by side (one server each), so that make test waits for the longest
    done = {}
    threads = [threading.Thread(target=lambda r=r: done.__setitem__(
        r[0], scenario(r[0], r[1], r[2], r[3], a.conns, r[4], a.deadline))) for r in runs]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = True
    for name, *_ in runs:
        ok = report(name, *done[name], a.deadline) and ok
    say(f"{'passed' if ok else 'FAILED'} in {time.monotonic() - t0:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
