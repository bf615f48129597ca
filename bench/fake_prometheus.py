#!/usr/bin/env python3
"""A fault-injecting stand-in for Prometheus's instant query API, for benchmarks.

usage: fake_prometheus.py PORT METRICS_FILE FAULT_FILE

Answers POST/GET /api/v1/query from the series of an exposition file (as a
Prometheus scraping it with honor_labels would): the query
`max by (node) (timestamp(ai_collector_up))` gets each node's sample time (now),
any other query every series. FAULT_FILE, re-read on every query, holds one of:

  none            answer normally (also when the file is missing or empty)
  hang            accept and never answer while the fault lasts
  slow MS         answer MS milliseconds after the query arrived
  500             HTTP 500 with a text body
  truncated       the first half of the JSON body
  nan / inf       the first node's first used-memory value NaN / its await +Inf
  unknown N       series for N more nodes that no scheduler knows (default 200)
                  (their sample times too)
  duplicated N    the used-memory series of the first N nodes (default 10) twice,
                  from another instance, with another value

"down" is the process not running: the bench script stops and restarts it.
"""
import http.server
import json
import re
import socketserver
import sys
import time
import urllib.parse

port, metrics_file, fault_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

series = []  # (labels with __name__, value text)
for line in open(metrics_file):
    if line.startswith("#") or not line.strip():
        continue
    m = LINE.match(line.strip())
    labels = dict(LABEL.findall(m.group(2) or ""))
    labels["__name__"] = m.group(1)
    series.append((labels, m.group(3)))
nodes = sorted({l["node"] for l, _ in series if "node" in l})


def fault():
    try:
        with open(fault_file) as f:
            words = f.read().split()
    except OSError:
        return "none", None
    return (words[0], words[1] if len(words) > 1 else None) if words else ("none", None)


def body(kind, arg, query):
    now = time.time()
    sample_times = "timestamp(" in query
    # Any other query is a selector {__name__=~"a|b|…"}: those families only.
    sel = re.search(r'__name__=~"([^"]+)"', query)
    families = set(sel.group(1).split("|")) if sel else None
    if sample_times:
        names = list(nodes)
        if kind == "unknown":
            names += [f"ghost-{i}" for i in range(int(arg or 200))]
        result = [{"metric": {"node": n}, "value": [now, f"{now:.3f}"]} for n in names]
    else:
        rows = [(l, v) for l, v in series if families is None or l["__name__"] in families]
        first = nodes[0]
        if kind in ("nan", "inf"):
            want = "ai_gpu_memory_used_bytes" if kind == "nan" else "ai_storage_await_seconds"
            for i, (l, v) in enumerate(rows):
                if l["__name__"] == want and l.get("node") == first:
                    rows[i] = (l, "NaN" if kind == "nan" else "+Inf")
                    break
        elif kind == "unknown":
            ghost_of = {n: f"ghost-{i}" for i, n in enumerate(nodes[: int(arg or 200)])}
            rows += [(dict(l, node=ghost_of[l["node"]]), v) for l, v in list(rows) if l.get("node") in ghost_of]
        elif kind == "duplicated":
            dup = set(nodes[: int(arg or 10)])
            rows += [(dict(l, instance="other:9410"), str(float(v) / 2 + 1)) for l, v in list(rows)
                     if l["__name__"] == "ai_gpu_memory_used_bytes" and l.get("node") in dup]
        result = [{"metric": l, "value": [now, v]} for l, v in rows]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer(urllib.parse.urlparse(self.path).query)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.answer(self.rfile.read(n).decode())

    def answer(self, form):
        query = urllib.parse.parse_qs(form).get("query", [""])[0]
        start = time.time()
        kind, arg = fault()
        if kind == "hang":
            while fault()[0] == "hang":
                time.sleep(0.05)
            kind, arg = fault()
        if kind == "500":
            data, status, ctype = b"internal server error\n", 500, "text/plain"
        else:
            data, status, ctype = body(kind, arg, query), 200, "application/json"
            if kind == "truncated":
                data = data[: len(data) // 2]
        if kind == "slow":  # MS in all, the time to build the answer included
            time.sleep(max(0.0, int(arg or 4900) / 1000 - (time.time() - start)))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", port), Handler).serve_forever()
