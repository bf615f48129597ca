#!/usr/bin/env python3
"""Latency of `tidal serve` and `tidal-agent` beside idle and slowloris connections
(the HTTP layer's target, docs/hardening.md): a valid 1 000-node /filter within 50 ms of its time on a quiet
server, and the agent's /metrics scrape within 100 ms, while each server holds 1 000
idle keep-alive connections (connected, one request answered, then silent) and 100
slowloris connections (one header byte a second, never ending).

The real binaries on loopback, started as tests/hostile/hostile_clients.py starts
them (tests/hostile/hostile.py): serve with the deploy's arguments and policy and no
Kubernetes API, fed by bench/fake_prometheus.py with gen_payloads.py's 1 000 nodes;
one agent over the NVML stub (the e2e harness's start_agent). The filter is
gen_payloads.py's prioritize.json (ExtenderArgs naming 1 000 nodes), sent REQUESTS
times one at a time on one keep-alive connection, as kube-scheduler sends it; the
scrape is a GET /metrics on one keep-alive connection, as Prometheus scrapes; the
requests of a series INTERVAL apart (50 ms: 200 span 10 s).
First on the quiet servers, then with the hostile connections open: a connection
the server closes is opened again at once (an attacker reconnects), so the
pressure stays for the whole measurement (a second after the close: an attacker
reconnecting at a bounded rate).

A request that gets no answer in 5 s counts as failed; after 3 failures in a row
the series stops. Exit status 0 when both targets hold and nothing failed, 1
otherwise.

usage: bench/hostile-clients.py [--tidal BIN] [--agent BIN] [--nvml-stub LIB]
           [--requests 200] [--interval 0.05] [--idle 1000] [--slowloris 100]
           [--out FILE.json]"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import shutil
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                "tests", "hostile"))

import hostile as h  # noqa: E402  pylint: disable=wrong-import-position

FILTER_SLACK_MS = 50
SCRAPE_LIMIT_MS = 100
REQUEST_TIMEOUT_S = 5
GIVE_UP_AFTER = 3


def measure(port, request, check, count, interval_s=0.0):
    """Latencies (ms) of `count` requests one at a time on one keep-alive connection
    (opened again when the server closes it), `interval_s` apart, and the failures."""
    conn, latencies, failures, in_a_row = None, [], [], 0
    for i in range(count):
        if i and interval_s:
            time.sleep(interval_s)
        started = time.perf_counter()
        try:
            if conn is None:
                conn = h.Conn(port, REQUEST_TIMEOUT_S)
            conn.send(request)
            resp = conn.read_response(REQUEST_TIMEOUT_S)
            why = check(resp)
        except (TimeoutError, h.Closed, OSError) as e:
            why = f"{type(e).__name__}: {e}"
        elapsed = (time.perf_counter() - started) * 1000
        if why is None:
            latencies.append(elapsed)
            in_a_row = 0
            if resp.headers.get("connection", "").lower() == "close":
                conn.close()
                conn = None
            continue
        failures.append(f"{why} after {elapsed:.0f} ms")
        in_a_row += 1
        if conn is not None:
            conn.close()
            conn = None
        if in_a_row >= GIVE_UP_AFTER:
            break
    if conn is not None:
        conn.close()
    return latencies, failures


def summary(latencies, failures):
    if not latencies:
        return {"ok": 0, "failed": len(failures), "median_ms": None, "p99_ms": None,
                "failures": failures[:5]}
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"ok": len(latencies), "failed": len(failures),
            "median_ms": statistics.median(ordered), "p99_ms": p99, "failures": failures[:5]}


def scrape_check(resp):
    if resp.status == 200 and b"ai_gpu_memory_total_bytes" in resp.body:
        return None
    return f"HTTP {resp.status}: {resp.body[:100]!r}"


def fmt(ms):
    return "—" if ms is None else f"{ms:.2f}"


def ratio(a, b):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tidal")
    p.add_argument("--agent")
    p.add_argument("--nvml-stub")
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--idle", type=int, default=1000)
    p.add_argument("--slowloris", type=int, default=100)
    p.add_argument("--interval", type=float, default=0.05,
                   help="seconds between two requests of a series (default 0.05: 200 "
                        "requests span 10 s, while the servers time out and the pools "
                        "reopen hostile connections)")
    p.add_argument("--out", help="write the figures as JSON here")
    args = p.parse_args()
    tools = h.binaries(args.tidal, args.agent, args.nvml_stub)
    h.raise_fd_limit()
    h.stop_on_signals()
    workdir = tempfile.mkdtemp(prefix="tidal-hostile-bench-")
    pools = []
    try:
        filter_body = h.generate_payloads(workdir)
        sup = h.Supervisor(workdir)
        h._ALL_SUPERVISORS.append(sup)  # pylint: disable=protected-access
        prom = h.FakePrometheus(sup, workdir)
        prom.start()
        rig = h.Rig(tools, os.path.join(workdir, "rig"), prom.url)
        rig.start_serve()
        rig.start_agent()
        filter_req = h.request_bytes("POST", "/filter", filter_body, port=rig.serve_port)
        scrape_req = h.request_bytes("GET", "/metrics", port=rig.agent_port)

        results = {}
        # Warm both up (the first filters fill caches and buffers).
        measure(rig.serve_port, filter_req, h.valid_filter_answer, 20)
        print(f"quiet: {args.requests} filters, {args.requests} scrapes", flush=True)
        results["filter quiet"] = summary(*measure(rig.serve_port, filter_req,
                                                   h.valid_filter_answer, args.requests,
                                                   args.interval))
        results["scrape quiet"] = summary(*measure(rig.agent_port, scrape_req, scrape_check,
                                                   args.requests, args.interval))

        print(f"opening {args.idle} idle + {args.slowloris} slowloris connections to serve "
              f"and to the agent", flush=True)
        for port in (rig.serve_port, rig.agent_port):
            pools.append(h.HostilePool(port, idle=args.idle, slowloris=args.slowloris,
                                       replace=True).open())
        for pool in pools:
            pool.wait("answers", lambda s: s["idle"]["answered"] >= args.idle, 15)
        opened = [pool.snapshot() for pool in pools]
        print(f"  serve: {opened[0]}\n  agent: {opened[1]}", flush=True)
        print(f"beside them: {args.requests} filters, {args.requests} scrapes", flush=True)
        results["filter hostile"] = summary(*measure(rig.serve_port, filter_req,
                                                     h.valid_filter_answer, args.requests,
                                                     args.interval))
        results["scrape hostile"] = summary(*measure(rig.agent_port, scrape_req, scrape_check,
                                                     args.requests, args.interval))
        after = [pool.snapshot() for pool in pools]
        reopened = [dict(pool.replaced) for pool in pools]
        for pool in pools:
            pool.close()
        pools = []

        fq, fh = results["filter quiet"], results["filter hostile"]
        sq, sh = results["scrape quiet"], results["scrape hostile"]
        filter_ok = (fh["failed"] == 0 and fq["failed"] == 0 and fh["median_ms"] is not None
                     and fq["median_ms"] is not None
                     and fh["median_ms"] <= fq["median_ms"] + FILTER_SLACK_MS
                     and fh["p99_ms"] <= fq["p99_ms"] + FILTER_SLACK_MS)
        scrape_ok = (sh["failed"] == 0 and sh["p99_ms"] is not None
                     and sh["p99_ms"] <= SCRAPE_LIMIT_MS)

        print()
        print("| request | quiet median / p99 (ms) | hostile median / p99 (ms) | ratio median / p99 "
              "| failed quiet / hostile | target | met |")
        print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
        print(f"| serve /filter, 1 000 nodes | {fmt(fq['median_ms'])} / {fmt(fq['p99_ms'])} | "
              f"{fmt(fh['median_ms'])} / {fmt(fh['p99_ms'])} | "
              f"{ratio(fh['median_ms'], fq['median_ms'])} / {ratio(fh['p99_ms'], fq['p99_ms'])} | "
              f"{fq['failed']} / {fh['failed']} | within {FILTER_SLACK_MS} ms of quiet | "
              f"{'yes' if filter_ok else 'NO'} |")
        print(f"| agent /metrics | {fmt(sq['median_ms'])} / {fmt(sq['p99_ms'])} | "
              f"{fmt(sh['median_ms'])} / {fmt(sh['p99_ms'])} | "
              f"{ratio(sh['median_ms'], sq['median_ms'])} / {ratio(sh['p99_ms'], sq['p99_ms'])} | "
              f"{sq['failed']} / {sh['failed']} | p99 ≤ {SCRAPE_LIMIT_MS} ms | "
              f"{'yes' if scrape_ok else 'NO'} |")
        print()
        for name, snap, again in (("serve", after[0], reopened[0]),
                                         ("agent", after[1], reopened[1])):
            print(f"{name}: hostile connections at the end {snap}; opened again after the "
                  f"server closed them: {again}")
        for name, r in results.items():
            if r["failures"]:
                print(f"{name}: first failures: {r['failures']}")
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump({"results": results, "pools_at_end": after, "reopened": reopened,
                           "idle": args.idle, "slowloris": args.slowloris,
                           "requests": args.requests, "interval_s": args.interval}, f,
                          indent=1)
        print("PASS" if filter_ok and scrape_ok else "FAIL", flush=True)
        return 0 if filter_ok and scrape_ok else 1
    except Exception:
        if "rig" in locals():
            print(rig.tails(20), file=sys.stderr)
        raise
    finally:
        for pool in pools:
            pool.close()
        h.stop_everything()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
