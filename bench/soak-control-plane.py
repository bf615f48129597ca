#!/usr/bin/env python3
"""Soak of Tidal on the e2e harness's real control plane: pods created
and deleted continuously, Prometheus restarted every minute; at the end, the
scheduling attempts that failed because of Tidal and tidal serve's RSS.

The cluster is tests/e2e/harness.py's, as every e2e scenario starts it: etcd,
kube-apiserver, kube-scheduler v1.23 with the deploy's KubeSchedulerConfiguration
(filter, prioritize and bind through Tidal, ignorable: false), one tidal-agent per
node over the NVML stub, a real Prometheus scraping them every second, tidal serve
with the deploy's arguments and policy. NODES fake nodes of 4 × A10 24 GB, 10–20 %
used. Then, for WARMUP and then SECONDS seconds:

* one-GPU pods (8 GiB declared) are created at RATE a second while fewer than
  MAX_LIVE of the soak's pods exist (the default leaves a third of the GPU slots
  free, so a pod is never refused for want of room), and each is deleted (grace 0:
  there is no kubelet) HOLD seconds after it is seen bound;
* Prometheus is stopped (SIGTERM) every RESTART_EVERY seconds and started again
  DOWN seconds later (default 21 s, longer than the deploy policy's 20 s
  metricCacheTTL: serve's fetches fail at every restart, so it goes to its
  fallback, past stage2After to stage 2, and back);
* serve's RSS is read every 5 s.

At the end the pods still there are given 90 s to be bound, everything is deleted,
and once serve is back on a snapshot (stage 0) its RSS is read again.

Failed because of Tidal (any one fails the run):
* FailedScheduling events whose message names the extender (its URL: it could not
  be asked, or it answered an error) or one of Tidal's plugins (a node refused by
  Tidal's policy: with room on every node this should not happen);
* tidal serve's tidal_extender_http_errors_total, tidal_extender_requests_total with
  a code other than ok, tidal_extender_binds_total with an outcome other than bound.
Other FailedScheduling events (kube-scheduler's own filters) are reported, not
counted. RSS: flat when the end is within 10 % of the reading after the warm-up.

Exit status: 0 pass, 1 fail, 77 when the control plane's binaries are missing
(as the e2e tests: $KUBE_BIN_DIR, else ../shared/k8s).

usage: bench/soak-control-plane.py [--seconds 600] [--warmup 60] [--restart-every 60] [--down 21]
           [--nodes 8] [--rate 2] [--max-live 20] [--hold 5] [--build build/release]
           [--out FILE.json]"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))

# pylint: disable=wrong-import-position
from harness import (TEST_NAMESPACE, Cluster, Tools, a10_node, find_kube_binaries,  # noqa: E402
                     metric_sum, missing_tools)
from kubeapi import ApiError  # noqa: E402
from pods import gpu_pod, name_of, node_of  # noqa: E402
from procs import wait_until  # noqa: E402

SKIP = 77
PREFIX = "soak-"
TIDAL_PLUGINS = ("loadaware", "gpufit", "balance", "fallback", "tidal")


class Interrupted(BaseException):
    pass


def _interrupt(signum, _frame):
    raise Interrupted(f"signal {signum}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=600, help="soak after the warm-up")
    p.add_argument("--warmup", type=float, default=60, help="churn before the first RSS reading")
    p.add_argument("--restart-every", type=float, default=60, help="Prometheus restart period")
    p.add_argument("--down", type=float, default=21,
                   help="seconds Prometheus stays stopped at each restart (default: longer "
                        "than the deploy policy's metricCacheTTL, 20 s, so that serve's "
                        "fetches see every restart)")
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--rate", type=float, default=2.0, help="pods created a second")
    p.add_argument("--max-live", type=int, default=20, help="soak pods existing at once")
    p.add_argument("--hold", type=float, default=5.0, help="seconds a bound pod lives")
    p.add_argument("--build", default=os.path.join(SOURCE_DIR, "build", "release"))
    p.add_argument("--out", help="write the figures as JSON here")
    return p.parse_args()


def find_tools(build):
    tidal = os.path.join(build, "src", "cli", "tidal")
    agent = os.path.join(build, "src", "cli", "tidal-agent")
    stub = os.path.join(build, "tests", "nvml_stub", "lib", "libnvidia-ml.so.1")
    for path in (tidal, agent, stub):
        if not os.path.isfile(path):
            raise SystemExit(f"{path}: no such file (build tidal, tidal-agent, nvml_stub first)")
    missing = missing_tools()
    kube_bin, why = find_kube_binaries(SOURCE_DIR, os.path.join(build, "k8s-bin"))
    if why:
        missing.append(f"kube-apiserver and kube-scheduler: {why}")
    if missing:
        print("SKIPPED: the soak needs:\n  " + "\n  ".join(missing), flush=True)
        return None
    return Tools(kube_bin, os.path.abspath(tidal), os.path.abspath(agent),
                 os.path.abspath(stub), SOURCE_DIR)


def soak_nodes(count):
    fractions = (0.10, 0.15, 0.12, 0.20, 0.18, 0.11, 0.14, 0.16)
    return [a10_node(f"node-{i}", [fractions[(i + g) % len(fractions)] for g in range(4)])
            for i in range(count)]


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


class Soak:
    def __init__(self, cluster, args):
        self.cluster = cluster
        self.api = cluster.api
        self.args = args
        self.created = {}  # name -> creation time
        self.bound_at = {}  # name -> first seen bound
        self.deleted = set()
        self.next_id = 0
        self.create_errors = []
        self.restarts = 0
        self.restart_errors = []
        self.rss_samples = []  # (t, kB)
        self.stop_restarts = threading.Event()
        self.restarter = None

    @property
    def serve_pid(self):
        return self.cluster.sup.procs["serve"].pid

    # Prometheus restarts, on a thread of their own so that pods keep coming.

    def _restart_loop(self):
        next_stop = time.monotonic() + self.args.restart_every
        while not self.stop_restarts.wait(max(0.0, next_stop - time.monotonic())):
            next_stop += self.args.restart_every
            try:
                self.cluster.stop_prometheus(sig=signal.SIGTERM)
                if self.stop_restarts.wait(self.args.down):
                    break  # the end: end_restarts() starts it again
                self.cluster.start_prometheus()
                self.restarts += 1
                print(f"  {time.strftime('%H:%M:%S')} Prometheus restarted ({self.restarts})",
                      flush=True)
            except Exception as e:  # pylint: disable=broad-except
                self.restart_errors.append(f"{type(e).__name__}: {e}")

    def start_restarts(self):
        self.restarter = threading.Thread(target=self._restart_loop, daemon=True)
        self.restarter.start()

    def end_restarts(self):
        self.stop_restarts.set()
        if self.restarter:
            self.restarter.join(timeout=120)
        if not self.cluster.sup.running("prometheus"):
            self.cluster.start_prometheus()

    # Pods.

    def live(self):
        return [n for n in self.created if n not in self.deleted]

    def create_one(self):
        name = f"{PREFIX}{self.next_id:06d}"
        self.next_id += 1
        try:
            self.api.create_pod(TEST_NAMESPACE, gpu_pod(name))
            self.created[name] = time.monotonic()
        except (ApiError, OSError) as e:
            self.create_errors.append(f"{name}: {e}")

    def delete(self, name):
        try:
            self.api.request("DELETE", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods/{name}"
                             "?gracePeriodSeconds=0")
        except ApiError as e:
            if e.status != 404:
                raise
        self.deleted.add(name)

    def observe(self, hold):
        """Records bindings; deletes pods bound for `hold` seconds."""
        now = time.monotonic()
        for pod in self.api.pods(TEST_NAMESPACE):
            name = name_of(pod)
            if name not in self.created or name in self.deleted:
                continue
            if node_of(pod) and name not in self.bound_at:
                self.bound_at[name] = now
            if name in self.bound_at and now - self.bound_at[name] >= hold:
                self.delete(name)

    def churn(self, seconds, label):
        """Creates and deletes pods for `seconds`; samples RSS every 5 s."""
        end = time.monotonic() + seconds
        next_create = time.monotonic()
        next_observe = next_sample = time.monotonic()
        interval = 1.0 / self.args.rate
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_create:
                next_create += interval
                if len(self.live()) < self.args.max_live:
                    self.create_one()
            if now >= next_observe:
                next_observe = now + 0.5
                self.observe(self.args.hold)
            if now >= next_sample:
                next_sample = now + 5
                self.cluster.sup.require_running("serve")
                self.rss_samples.append((now, proc_status(self.serve_pid)["VmRSS"]))
            time.sleep(max(0.0, min(next_create, next_observe, end) - time.monotonic()))
        print(f"  {label}: {len(self.created)} pods created, {len(self.bound_at)} bound, "
              f"{len(self.deleted)} deleted so far; serve RSS {self.rss_samples[-1][1]} kB",
              flush=True)

    def drain(self, timeout_s=90):
        """The pods left: bound within timeout_s (then deleted), or reported."""
        deadline = time.monotonic() + timeout_s
        while self.live() and time.monotonic() < deadline:
            self.observe(0)
            time.sleep(0.5)
        stuck = self.live()
        for name in stuck:
            self.delete(name)
        return stuck


def events_by_kind(api, serve_url):
    """FailedScheduling events of the soak's pods: counts (with the events' own
    repeat counts) by where the reason came from, and a few messages of each."""
    counts = {"extender": 0, "tidal policy": 0, "other": 0}
    samples = {k: [] for k in counts}
    for e in api.events(TEST_NAMESPACE):
        if e.get("reason") != "FailedScheduling":
            continue
        if not e.get("involvedObject", {}).get("name", "").startswith(PREFIX):
            continue
        message = e.get("message", "")
        n = int(e.get("count") or 1)
        if serve_url in message or "extender" in message.lower():
            kind = "extender"
        elif any(re.search(rf"\b{p}\b", message) for p in TIDAL_PLUGINS):
            kind = "tidal policy"
        else:
            kind = "other"
        counts[kind] += n
        if len(samples[kind]) < 3:
            samples[kind].append(f"{e['involvedObject']['name']}: {message[:300]}")
    return counts, samples


def serve_errors(cluster):
    m = cluster.serve_metrics()
    out = {"http_errors": metric_sum(m, "tidal_extender_http_errors_total")}
    not_ok, binds_bad = {}, {}
    for key, value in m.items():
        if key.startswith("tidal_extender_requests_total{") and 'code="ok"' not in key and value:
            not_ok[key] = value
        if key.startswith("tidal_extender_binds_total{") and 'outcome="bound"' not in key and value:
            binds_bad[key] = value
    out["requests_not_ok"] = not_ok
    out["binds_not_bound"] = binds_bad
    out["requests_ok"] = sum(v for k, v in m.items()
                             if k.startswith("tidal_extender_requests_total{") and 'code="ok"' in k)
    out["binds_bound"] = metric_sum(m, "tidal_extender_binds_total", outcome="bound")
    out["fallback_transitions"] = metric_sum(m, "tidal_extender_fallback_transitions_total")
    out["metrics_source_failures"] = m.get("tidal_extender_metrics_source_failures", 0)
    out["stage"] = m.get("tidal_extender_fallback_stage")
    return out


def main():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    args = parse_args()
    tools = find_tools(args.build)
    if tools is None:
        return SKIP
    workdir = tempfile.mkdtemp(prefix="tidal-soak-")
    cluster = Cluster(tools, soak_nodes(args.nodes), workdir)
    soak = None
    ok = False
    try:
        cluster.start()
        soak = Soak(cluster, args)
        print(f"warm-up: {args.warmup:.0f} s of churn", flush=True)
        soak.churn(args.warmup, "warm-up")
        time.sleep(1)
        start = proc_status(soak.serve_pid)
        print(f"after warm-up: serve RSS {start['VmRSS']} kB, {start['Threads']} threads, "
              f"{start['fds']} fds", flush=True)
        soak.start_restarts()
        print(f"soak: {args.seconds:.0f} s, Prometheus restarted every "
              f"{args.restart_every:.0f} s ({args.down:.0f} s down)", flush=True)
        began = time.monotonic()
        while time.monotonic() - began < args.seconds:
            chunk = min(60.0, args.seconds - (time.monotonic() - began))
            soak.churn(chunk, f"{time.monotonic() - began + chunk:.0f} s of {args.seconds:.0f}")
        soak.end_restarts()
        stuck = soak.drain()
        wait_until("tidal serve back on a snapshot (stage 0)",
                   lambda: cluster.serve_metrics().get("tidal_extender_fallback_stage") == 0,
                   120, 0.5)
        time.sleep(2)
        end = proc_status(soak.serve_pid)
        counts, samples = events_by_kind(cluster.api, cluster.serve_url)
        errors = serve_errors(cluster)

        waits = [soak.bound_at[n] - soak.created[n] for n in soak.bound_at]
        peak = max(kb for _, kb in soak.rss_samples)
        change = (end["VmRSS"] - start["VmRSS"]) / start["VmRSS"] * 100
        tidal_failures = counts["extender"] + counts["tidal policy"] + errors["http_errors"] + \
            sum(errors["requests_not_ok"].values()) + sum(errors["binds_not_bound"].values())
        rss_flat = abs(change) <= 10

        print()
        print(f"pods: {len(soak.created)} created, {len(soak.bound_at)} bound, "
              f"{len(soak.deleted)} deleted; creation errors {len(soak.create_errors)}; "
              f"left unbound after 90 s: {len(stuck)} {stuck[:5]}")
        if waits:
            waits.sort()
            print(f"created → seen bound: median {statistics.median(waits):.2f} s, "
                  f"p99 {waits[int(0.99 * (len(waits) - 1))]:.2f} s, max {waits[-1]:.2f} s "
                  f"(polled every 0.5 s)")
        print(f"Prometheus restarts: {soak.restarts} (errors {soak.restart_errors[:3]}); serve: "
              f"{errors['metrics_source_failures']:.0f} failed fetches, "
              f"{errors['fallback_transitions']:.0f} fallback transitions")
        print(f"serve: {errors['requests_ok']:.0f} verbs answered ok, {errors['binds_bound']:.0f} "
              f"binds; not ok: {errors['requests_not_ok'] or 'none'}; binds not bound: "
              f"{errors['binds_not_bound'] or 'none'}; HTTP errors {errors['http_errors']:.0f}")
        print(f"FailedScheduling events: extender {counts['extender']}, Tidal's policy "
              f"{counts['tidal policy']}, other {counts['other']}")
        for kind, lines in samples.items():
            for line in lines:
                print(f"  {kind}: {line}")
        print(f"serve RSS: {start['VmRSS']} kB after warm-up, {end['VmRSS']} kB at the end "
              f"({change:+.1f} %), peak sampled {peak} kB, VmHWM {end['VmHWM']} kB; threads "
              f"{start['Threads']} → {end['Threads']}, fds {start['fds']} → {end['fds']}")
        print(f"scheduling attempts failed because of Tidal: {tidal_failures:.0f}")
        ok = tidal_failures == 0 and rss_flat and not soak.restart_errors
        print("PASS" if ok else "FAIL" + ("" if tidal_failures == 0 else
                                          ": scheduling attempts failed because of Tidal") +
              ("" if rss_flat else ": RSS moved by more than 10 %") +
              ("" if not soak.restart_errors else ": Prometheus restarts failed"), flush=True)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump({"args": vars(args), "created": len(soak.created),
                           "bound": len(soak.bound_at), "stuck": stuck,
                           "restarts": soak.restarts, "events": counts, "serve": errors,
                           "rss_start_kb": start["VmRSS"], "rss_end_kb": end["VmRSS"],
                           "rss_peak_sampled_kb": peak, "rss_samples": soak.rss_samples},
                          f, indent=1)
    except (Exception, Interrupted) as e:  # pylint: disable=broad-except
        print(f"ERROR {type(e).__name__}: {e}", flush=True)
        print(cluster.sup.tails(20), flush=True)
        ok = False
    finally:
        if soak is not None:
            soak.stop_restarts.set()
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
