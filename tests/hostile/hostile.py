"""Hostile HTTP clients against the real `tidal serve` and `tidal-agent` (docs/hardening.md, "The HTTP layer").

Shared by tests/hostile/hostile_clients.py (a test per row of the issue) and
bench/hostile-clients.py (latency beside idle and slowloris connections):

* Rig: `tidal serve` with the deploy's arguments and policy but no Kubernetes API
  (no --in-cluster: the verbs without /bind, as bench/soak.sh runs it), fed by
  bench/fake_prometheus.py with the series of bench/gen_payloads.py's 1 000 nodes;
  `tidal-agent` over the NVML stub, started by the e2e harness
  (tests/e2e/harness.py, Cluster.start_agent). Every process is started by the
  e2e Supervisor (tests/e2e/procs.py): one log each, PR_SET_PDEATHSIG, stopped by
  its id.
* A raw HTTP/1.1 client on sockets (what http.client will not send: pipelining,
  a body claim with no body, headers without end) and pools of idle keep-alive
  and slowloris connections.
* The server's memory from /proc/PID/status (VmRSS, VmHWM; the peak is reset by
  writing 5 to /proc/PID/clear_refs) and its listen backlog from `ss -ltn`.

Python 3 standard library, plus what the e2e harness imports (PyYAML)."""
import errno
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))

# pylint: disable=wrong-import-position
from harness import Cluster, Tools, a10_node, parse_exposition, render_serve_args  # noqa: E402
from procs import Supervisor, free_port, tail, wait_until  # noqa: E402

NODES = 1000  # the filter's NodeNames and the fake Prometheus' nodes
MIB = 1 << 20
# tidal serve's body limit (include/tidal/extender/server.h, max_body_bytes), used
# when serve has no flag to set a smaller one.
SERVE_DEFAULT_MAX_BODY = 64 * MIB
LOCALHOST = "127.0.0.1"

_ALL_SUPERVISORS = []  # stopped at exit or on a signal, whatever the tests did


def default_binary(*parts):
    return os.path.join(SOURCE_DIR, "build", "release", *parts)


def binaries(tidal=None, agent=None, nvml_stub=None):
    """Tools for the harness: the given paths, else the release build's."""
    tidal = os.path.abspath(tidal or default_binary("src", "cli", "tidal"))
    agent = os.path.abspath(agent or default_binary("src", "cli", "tidal-agent"))
    stub = os.path.abspath(nvml_stub or default_binary("tests", "nvml_stub", "lib",
                                                       "libnvidia-ml.so.1"))
    for path in (tidal, agent, stub):
        if not os.path.isfile(path):
            raise SystemExit(f"{path}: no such file (build tidal, tidal-agent and nvml_stub "
                             f"first)")
    return Tools(kube_bin_dir=None, tidal=tidal, agent=agent, nvml_stub=stub,
                 source_dir=SOURCE_DIR)


def stop_everything():
    for sup in _ALL_SUPERVISORS:
        sup.stop_all()


def stop_on_signals():
    """SIGTERM/SIGINT/SIGHUP (CTest's timeout, ^C) unwind as KeyboardInterrupt, so the
    finally blocks stop every process; PR_SET_PDEATHSIG covers SIGKILL."""
    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, interrupt)


# Payloads.

def generate_payloads(workdir, nodes=NODES):
    """bench/gen_payloads.py's files: workdir/metrics (the agents' series of `nodes`
    nodes) and workdir/prioritize.json (ExtenderArgs naming every node)."""
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "gen_payloads.py"),
                    workdir, str(nodes)], check=True)
    with open(os.path.join(workdir, "prioritize.json"), "rb") as f:
        return f.read()


def huge_filter_body(filter_body, names):
    """The same pod with `names` NodeNames (gen_payloads' names, then unknown ones)."""
    args = json.loads(filter_body)
    args["NodeNames"] = [f"gpu-node-{i}" for i in range(names)]
    return json.dumps(args, separators=(",", ":")).encode()


# Processes.

class Rig:
    """tidal serve and tidal-agent for one test, on free loopback ports, started and
    stopped by the e2e Supervisor of a Cluster that never starts a control plane."""

    def __init__(self, tools, workdir, prometheus_url):
        self.tools = tools
        self.node = a10_node("node-0", (0.10, 0.20, 0.30, 0.40))
        self.cluster = Cluster(tools, [self.node], workdir)
        self.sup = self.cluster.sup
        _ALL_SUPERVISORS.append(self.sup)
        self.prometheus_url = prometheus_url
        self.serve_port = None
        self.agent_port = None

    # tidal serve

    def serve_help(self):
        return subprocess.run([self.tools.tidal, "serve", "--help"], capture_output=True,
                              text=True, check=False).stdout

    def serve_max_body(self):
        """(flag arguments, limit): a small limit where serve has a flag for it."""
        if "--max-body-bytes" in self.serve_help():
            return ["--max-body-bytes=1048576"], MIB
        return [], SERVE_DEFAULT_MAX_BODY

    def start_serve(self, extra_args=(), name="serve"):
        """The deploy's sidecar arguments (harness.render_serve_args) without
        --in-cluster: the verbs and the ops routes, no /bind, no API."""
        self.serve_port = free_port()
        args = render_serve_args(self.tools, f"{LOCALHOST}:{self.serve_port}",
                                 self.prometheus_url, kubeconfig=None)
        args = [a for a in args if not a.startswith("--kubeconfig")] + list(extra_args)
        self.sup.start(name, [self.tools.tidal, *args])
        wait_until("tidal serve /readyz and its snapshot of every node",
                   lambda: self._serve_live(name), 60, 0.25)
        return self.sup.procs[name]

    def _serve_live(self, name):
        self.sup.require_running(name)
        status, body = simple_request(self.serve_port, "GET", "/metrics", timeout_s=2)
        if status != 200:
            return False
        samples = parse_exposition(body.decode())
        if samples.get("tidal_extender_snapshot_nodes") != NODES:
            return False
        return simple_request(self.serve_port, "GET", "/readyz", timeout_s=2)[0] == 200

    @property
    def serve_pid(self):
        return self.sup.procs["serve"].pid

    # tidal-agent

    def start_agent(self):
        """One agent over the NVML stub, as the e2e harness starts it (1 s interval)."""
        self.cluster.start_agent(self.node)
        self.agent_port = self.cluster.ports[f"agent-{self.node.name}"]
        name = f"agent-{self.node.name}"
        wait_until("tidal-agent /metrics with the GPU series", lambda: self._agent_live(name),
                   30, 0.25)
        return self.sup.procs[name]

    def _agent_live(self, name):
        self.sup.require_running(name)
        status, body = simple_request(self.agent_port, "GET", "/metrics", timeout_s=2)
        return status == 200 and b"ai_gpu_memory_total_bytes" in body

    @property
    def agent_pid(self):
        return self.sup.procs[f"agent-{self.node.name}"].pid

    def stop(self):
        self.sup.stop_all()

    def tails(self, lines=30):
        return self.sup.tails(lines)


class FakePrometheus:
    """bench/fake_prometheus.py over the series of gen_payloads.py, fault "none"."""

    def __init__(self, sup, workdir):
        self.sup = sup
        self.workdir = workdir
        self.port = free_port()

    @property
    def url(self):
        return f"http://{LOCALHOST}:{self.port}"

    def start(self):
        fault = os.path.join(self.workdir, "fault")
        with open(fault, "w", encoding="utf-8") as f:
            f.write("none\n")
        self.sup.start("fake-prometheus", [
            sys.executable, os.path.join(SOURCE_DIR, "bench", "fake_prometheus.py"),
            str(self.port), os.path.join(self.workdir, "metrics"), fault])
        wait_until("fake Prometheus", self._up, 30, 0.1)

    def _up(self):
        self.sup.require_running("fake-prometheus")
        return simple_request(self.port, "GET", "/api/v1/query?query=up", timeout_s=2)[0] == 200


# /proc and ss.

def _status_kb(pid, field):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def rss_kb(pid):
    return _status_kb(pid, "VmRSS")


def peak_rss_kb(pid):
    return _status_kb(pid, "VmHWM")


def reset_peak_rss(pid):
    """The peak (VmHWM) becomes the current RSS (proc(5), clear_refs 5)."""
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def listen_backlog(port):
    """The accept queue's limit of the socket listening on port: ss's Send-Q."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0] == "LISTEN":
            return int(fields[2])
    raise RuntimeError(f"nothing listens on port {port}:\n{out}")


# A raw HTTP/1.1 client.

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case name -> value
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"HTTP {self.status} ({len(self.body)} bytes: {self.body[:120]!r})"


class Closed(Exception):
    """The server closed (or reset) the connection."""


def request_bytes(method, path, body=b"", headers=None, port=None):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {LOCALHOST}" + (f":{port}" if port else "")]
    headers = dict(headers or {})
    if body or method == "POST":
        headers.setdefault("Content-Type", "application/json")
        if "Transfer-Encoding" not in headers:
            headers.setdefault("Content-Length", str(len(body)))
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Conn:
    """One TCP connection and the bytes read but not yet parsed (pipelining)."""

    def __init__(self, port, timeout_s=10):
        self.port = port
        self.sock = socket.create_connection((LOCALHOST, port), timeout=timeout_s)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer in time")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError("no answer in time") from None
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(f"reset: {e}") from None
        if not chunk:
            raise Closed("closed by the server")
        self.buf += chunk

    def _until(self, marker, deadline):
        while marker not in self.buf:
            self._fill(deadline)
        i = self.buf.index(marker)
        head, self.buf = self.buf[:i], self.buf[i + len(marker):]
        return head

    def _exactly(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, timeout_s=10):
        """The next response; TimeoutError when none came, Closed when the
        connection ended before a whole one."""
        deadline = time.monotonic() + timeout_s
        head = self._until(b"\r\n\r\n", deadline).decode("latin-1")
        status_line, *header_lines = head.split("\r\n")
        status = int(status_line.split()[1])
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size = int(self._until(b"\r\n", deadline).split(b";")[0], 16)
                if size == 0:
                    self._until(b"\r\n", deadline)
                    break
                body += self._exactly(size, deadline)
                self._exactly(2, deadline)
        elif "content-length" in headers:
            body = self._exactly(int(headers["content-length"]), deadline)
        else:
            body = self.buf
            try:
                while True:
                    self._fill(deadline)
            except Closed:
                pass
            body, self.buf = self.buf, b""
        return Response(status, headers, body)

    def wait_closed(self, timeout_s):
        """True when the server closes (or resets) the connection within timeout_s;
        whatever it sends meanwhile is dropped."""
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                self._fill(deadline)
                self.buf = b""
        except Closed:
            return True
        except TimeoutError:
            return False

    def readable(self):
        """Whether the server has sent something (or closed) already."""
        sel = selectors.DefaultSelector()
        try:
            sel.register(self.sock, selectors.EVENT_READ)
            return bool(sel.select(0))
        finally:
            sel.close()


def simple_request(port, method, path, body=b"", headers=None, timeout_s=10):
    """(status, body) of one request on its own connection."""
    conn = Conn(port, timeout_s)
    try:
        conn.send(request_bytes(method, path, body, headers, port))
        r = conn.read_response(timeout_s)
        return r.status, r.body
    finally:
        conn.close()


def valid_filter_answer(resp):
    """None when resp is a 200 ExtenderFilterResult without Error, else why not."""
    if resp.status != 200:
        return f"HTTP {resp.status}: {resp.body[:200]!r}"
    try:
        doc = resp.json()
    except ValueError as e:
        return f"not JSON ({e}): {resp.body[:200]!r}"
    if not isinstance(doc, dict):
        return f"not an object: {resp.body[:200]!r}"
    if doc.get("Error"):
        return f"Error: {doc['Error']}"
    if not isinstance(doc.get("NodeNames"), list) and not isinstance(doc.get("FailedNodes"), dict):
        return f"neither NodeNames nor FailedNodes: {resp.body[:200]!r}"
    return None


# Pools of hostile connections, served by one background thread.

IDLE_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
# Sent one byte a second, never ending: the request line, a header, then a header
# value that never ends.
SLOWLORIS_PREFIX = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slowloris: "


class _Hostile:
    __slots__ = ("kind", "sock", "opened", "closed", "sent", "answered", "pending")

    def __init__(self, kind, sock):
        self.kind = kind
        self.sock = sock
        self.opened = time.monotonic()
        self.closed = None
        self.sent = 0
        self.answered = False
        self.pending = b""


class HostilePool:
    """Idle keep-alive connections (one request answered, then silent) and slowloris
    connections (one header byte a second) to a port, kept by a background thread.

    With replace=True a connection the server closes is opened again a second later
    (an attacker reconnects, at a bounded rate: the benchmark keeps the pressure on);
    without, the closing times are recorded (the tests judge them)."""

    def __init__(self, port, idle=0, slowloris=0, replace=False, byte_interval_s=1.0,
                 reopen_after_s=1.0):
        self.port = port
        self.want = {"idle": idle, "slowloris": slowloris}
        self.replace = replace
        self.interval = byte_interval_s
        self.conns = []
        self.replaced = {"idle": 0, "slowloris": 0}
        self.reopen_after = reopen_after_s
        self.to_reopen = []  # (when, kind)
        self.connect_errors = []
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.thread = None

    def _open(self, kind):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect((LOCALHOST, self.port))
        except OSError as e:
            s.close()
            self.connect_errors.append(f"{kind}: {e}")
            return None
        s.setblocking(False)
        c = _Hostile(kind, s)
        c.pending = IDLE_REQUEST if kind == "idle" else b""
        self.conns.append(c)
        self.sel.register(s, selectors.EVENT_READ, c)
        return c

    def open(self):
        """Opens every connection (idle ones send their request), then starts the
        thread that reads answers, trickles the slowloris bytes and watches for
        closes."""
        for kind, n in self.want.items():
            for _ in range(n):
                c = self._open(kind)
                if c is not None and kind == "idle":
                    self._flush(c)
        self.thread = threading.Thread(target=self._run, name="hostile-pool", daemon=True)
        self.thread.start()
        return self

    def _flush(self, c):
        try:
            n = c.sock.send(c.pending)
            c.pending = c.pending[n:]
        except BlockingIOError:
            pass
        except OSError:
            self._closed(c)

    def _closed(self, c):
        if c.closed is not None:
            return
        c.closed = time.monotonic()
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        if self.replace and not self.stop_flag.is_set():
            self.to_reopen.append((c.closed + self.reopen_after, c.kind))

    def _reopen_due(self):
        now = time.monotonic()
        due = [k for t, k in self.to_reopen if t <= now]
        self.to_reopen = [(t, k) for t, k in self.to_reopen if t > now]
        for kind in due:
            self.replaced[kind] += 1
            n = self._open(kind)
            if n is not None and kind == "idle":
                self._flush(n)

    def _run(self):
        next_byte = time.monotonic() + self.interval
        while not self.stop_flag.is_set():
            timeout = max(0.0, next_byte - time.monotonic())
            for key, _ in self.sel.select(timeout=min(timeout, 0.2)):
                c = key.data
                try:
                    data = c.sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                with self.lock:
                    if not data:
                        self._closed(c)
                    elif c.kind == "idle":
                        c.answered = True  # the first bytes of its answer: then silent
            if time.monotonic() >= next_byte:
                next_byte += self.interval
                with self.lock:
                    self._reopen_due()
                    for c in list(self.conns):
                        if c.closed is not None:
                            continue
                        if c.kind == "idle" and c.pending:
                            self._flush(c)
                        elif c.kind == "slowloris":
                            i = c.sent
                            byte = SLOWLORIS_PREFIX[i:i + 1] or b"a"
                            try:
                                c.sock.send(byte)
                                c.sent += 1
                            except BlockingIOError:
                                pass
                            except OSError:
                                self._closed(c)

    def snapshot(self):
        """Counts of the connections by kind and state."""
        with self.lock:
            out = {}
            for kind in self.want:
                mine = [c for c in self.conns if c.kind == kind]
                out[kind] = {"opened": len(mine),
                             "open": sum(c.closed is None for c in mine),
                             "answered": sum(c.answered for c in mine)}
            return out

    def lifetimes(self, kind):
        """(seconds each closed connection lived, open connections' ages)."""
        now = time.monotonic()
        with self.lock:
            mine = [c for c in self.conns if c.kind == kind]
            return ([c.closed - c.opened for c in mine if c.closed is not None],
                    [now - c.opened for c in mine if c.closed is None])

    def wait(self, what, predicate, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate(self.snapshot()):
                return True
            time.sleep(0.1)
        return predicate(self.snapshot())

    def close(self):
        self.stop_flag.set()
        if self.thread:
            self.thread.join(timeout=5)
        with self.lock:
            for c in self.conns:
                if c.closed is None:
                    try:
                        c.sock.close()
                    except OSError:
                        pass
                    c.closed = time.monotonic()
        self.sel.close()

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()


def raise_fd_limit():
    """1 000+ connections: the soft limit of open files up to the hard one (the
    servers started afterwards inherit it, as a container's runtime gives them a
    high one)."""
    import resource  # pylint: disable=import-outside-toplevel
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def is_reset(e):
    return isinstance(e, OSError) and e.errno in (errno.ECONNRESET, errno.EPIPE,
                                                  errno.ECONNABORTED)


__all__ = ["Rig", "FakePrometheus", "Conn", "Closed", "HostilePool", "Response", "binaries",
           "generate_payloads", "huge_filter_body", "listen_backlog", "peak_rss_kb",
           "reset_peak_rss", "rss_kb", "request_bytes", "simple_request", "stop_everything",
           "stop_on_signals", "valid_filter_answer", "raise_fd_limit", "is_reset", "tail",
           "MIB", "NODES", "SERVE_DEFAULT_MAX_BODY", "Supervisor", "wait_until"]
