#!/usr/bin/env python3
"""kube-scheduler's throughput with Tidal in its path, as a ratio to the scheduler
alone, in the manner of kube-scheduler's scheduler_perf.

On the e2e harness's real control plane (tests/e2e/harness.py): N fake nodes of
8 GPUs each, their GPU series in one static exposition that a real Prometheus
scrapes (an agent per node would not fit on this machine), `tidal serve` with the
deploy's flags and policy. Then, interleaved in one invocation, for each round
and each profile:
  alone      the deploy's KubeSchedulerConfiguration without its extender
(every profile with kube-scheduler's client limit raised to 5 000 requests a
second, as scheduler_perf does: at its default of 50 it caps the scheduler alone
at ~50 bindings a second, while Tidal's binds bypass it)
  null       filter and prioritize to bench/null_extender (every node passes, every
             score 0; no watches, no metrics): what the extender protocol alone
             costs kube-scheduler here, a floor under any extender's ratio
  filter     the extender with filter and prioritize (no bindVerb)
  bind       the deploy's configuration as it is (filter, prioritize and bind)
kube-scheduler is started with that configuration, P one-GPU pods are created at
once (8 client threads), and the time from the first create to the last binding
seen on a pod watch gives pods bound per second. Each run also reports
kube-scheduler's own throughput (its scheduled-attempts counter sampled every
second, averaged over the seconds it scheduled, as scheduler_perf does), the
means of its duration histograms, Tidal's request and bind histograms, and the
CPU each process used. The pods are deleted between runs.

Usage: bench/scheduler-throughput.py [--nodes 1000] [--pods 2000] [--rounds 2]
           [--build build/release] [--out FILE.json] [--profiles alone,null,filter,bind]
           [--device-plugin-mark] [--two-gpu-every N]
KUBE_BIN_DIR as for the e2e tests."""
import argparse
import concurrent.futures
import http.client
import http.server
import json
import os
import random
import socketserver
import ssl
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))

from harness import (GPU_RESOURCE, SCHEDULER_NAME, TEST_NAMESPACE, Cluster, FakeNode, Gpu,  # noqa: E402
                     Tools, find_kube_binaries, missing_tools, parse_exposition,
                     render_scheduler_config)
from kubeapi import http_get  # noqa: E402
from procs import wait_until  # noqa: E402

GIB = 1 << 30
GPUS_PER_NODE = 8
PROFILES = ("alone", "null", "filter", "bind")
CLIENT_THREADS = 8


def http_ok(url):
    """True once something answers at url (any status: the null extender serves POSTs)."""
    try:
        http_get(url, timeout_s=1)
        return True
    except OSError:
        return False


def bench_nodes(count, seed=7):
    """8 × 80 GB GPUs a node, each 5–60 % used: every pod fits somewhere."""
    rng = random.Random(seed)
    nodes = []
    for i in range(count):
        gpus = [Gpu(80 * GIB, int(80 * GIB * rng.uniform(0.05, 0.6))) for _ in range(GPUS_PER_NODE)]
        nodes.append(FakeNode(f"node-{i:05d}", gpus, model="NVIDIA A100-SXM4-80GB"))
    return nodes


def exposition(nodes):
    """The agents' series for every node, as one agent per node would expose them."""
    lines = ["# TYPE ai_gpu_memory_used_bytes gauge", "# TYPE ai_gpu_memory_total_bytes gauge",
             "# TYPE ai_storage_await_seconds gauge", "# TYPE ai_collector_up gauge"]
    for n in nodes:
        for i, g in enumerate(n.gpus):
            labels = f'node="{n.name}",gpu_id="{i}",uuid="GPU-{n.name}-{i}",model="{n.model}"'
            lines.append(f"ai_gpu_memory_used_bytes{{{labels}}} {g.used}")
            lines.append(f"ai_gpu_memory_total_bytes{{{labels}}} {g.total}")
        lines.append(f'ai_storage_await_seconds{{node="{n.name}",device="nvme0n1"}} 0.001')
        lines.append(f'ai_collector_up{{node="{n.name}",collector="gpu",reason=""}} 1')
    return ("\n".join(lines) + "\n").encode()


class StaticExposition:
    """Serves one exposition on a loopback port (Prometheus scrapes it)."""

    def __init__(self, body):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class BenchCluster(Cluster):
    """The harness's cluster with the agents replaced by one static exposition."""

    def start(self):
        self.pki.generate()
        self.start_etcd()
        self.start_apiserver()
        self.create_namespaces()
        with concurrent.futures.ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(self.create_node, self.nodes.values()))
        self.exposition = StaticExposition(exposition(self.nodes.values()))
        # One target of N nodes' series: scraped every 5 s, not every second.
        self.start_prometheus(scrape_interval="5s")
        self.wait_for_series()
        self.start_serve()
        self.null_port = self._port("null-extender")
        self.sup.start("null-extender", [self.null_extender, str(self.null_port)])
        wait_until("null extender", lambda: http_ok(f"http://127.0.0.1:{self.null_port}/filter"),
                   30, 0.1)

    def scrape_targets(self):
        return [f"127.0.0.1:{self.exposition.port}"]

    def stop(self):
        super().stop()
        if getattr(self, "exposition", None):
            self.exposition.stop()


def profile_config(tools, cluster, profile, run):
    config = render_scheduler_config(tools, cluster.kubeconfig, cluster.serve_url)
    # A lease of its own per run: the harness waits until this scheduler holds it,
    # which it takes once its caches are synced.
    config["leaderElection"]["resourceName"] = f"throughput-{run}"
    # As scheduler_perf does: kube-scheduler's client limit (50 requests a second by
    # default) would cap the scheduler alone at ~50 bindings a second, while Tidal's
    # binds go through its own client, and the ratio would measure the limiter.
    config["clientConnection"].update({"qps": 5000, "burst": 5000})
    if profile == "alone":
        del config["extenders"]
    elif profile == "filter":
        del config["extenders"][0]["bindVerb"]
    elif profile == "null":
        del config["extenders"][0]["bindVerb"]
        config["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{cluster.null_port}"
    return config


class ApiConnection:
    """One kept-alive HTTPS connection to the API server (a TLS handshake per pod
    would cost the API server more than the pod)."""

    def __init__(self, cluster):
        url = urllib.parse.urlparse(cluster.api.server)
        self.conn = http.client.HTTPSConnection(url.hostname, url.port,
                                                context=cluster.api.context, timeout=30)
        self.headers = {"Authorization": f"Bearer {cluster.api.token}",
                        "Content-Type": "application/json", "Accept": "application/json"}

    def call(self, method, path, body=None):
        self.conn.request(method, path, None if body is None else json.dumps(body), self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status}: {data[:300]!r}")
        return json.loads(data) if data else {}


def bench_pod(name, gpus=1):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {"ai.gpu-memory": "4Gi"}},
            "spec": {"schedulerName": SCHEDULER_NAME,
                     "containers": [{"name": "c", "image": "registry.example/train:1",
                                     "resources": {"limits": {GPU_RESOURCE: str(gpus)}}}]}}


def mark_device_plugin(cluster, node):
    """One pod in `default`, bound to `node` and marked as Tidal's device plugin marks
    a pod it gave the GPUs named (tidal.io/gpus-allocated): from then on the default
    profile's fgd (onlyWithTidalDevicePlugin) filters and scores. It stays for the
    whole invocation (only the test namespace's pods are deleted between runs)."""
    pod = bench_pod("tidal-device-plugin-mark")
    pod["metadata"]["annotations"].update({"tidal.io/gpus": "0", "tidal.io/gpus-allocated": "0"})
    pod["spec"]["nodeName"] = node
    ApiConnection(cluster).call("POST", "/api/v1/namespaces/default/pods", pod)


class BindWatch:
    """Watches the test namespace's pods and records when each is first seen bound."""

    def __init__(self, cluster, resource_version):
        self.bound_at = {}
        self.lock = threading.Lock()
        url = urllib.parse.urlparse(cluster.api.server)
        self.conn = http.client.HTTPSConnection(url.hostname, url.port, context=cluster.api.context)
        query = urllib.parse.urlencode({"watch": "1", "resourceVersion": resource_version,
                                        "timeoutSeconds": "3600"})
        self.conn.request("GET", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods?{query}",
                          headers={"Authorization": f"Bearer {cluster.api.token}"})
        self.resp = self.conn.getresponse()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.resp:
                event = json.loads(line)
                pod = event.get("object", {})
                if pod.get("spec", {}).get("nodeName"):
                    with self.lock:
                        self.bound_at.setdefault(pod["metadata"]["name"], time.monotonic())
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def count(self):
        with self.lock:
            return len(self.bound_at)

    def last(self):
        with self.lock:
            return max(self.bound_at.values())

    def close(self):
        self.conn.sock and self.conn.sock.close()


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def process_cpu(cluster):
    return {name: cpu_seconds(p.pid) for name, p in cluster.sup.procs.items() if p.poll() is None}


def histogram_means(before, after, prefix):
    """Δsum / Δcount of every histogram whose name starts with `prefix`, by series."""
    means = {}
    for key, total in after.items():
        family, _, labels = key.partition("{")
        if not family.startswith(prefix) or not family.endswith("_sum"):
            continue
        base = family[:-4]
        count_key = base + "_count" + ("{" + labels if labels else "")
        count = after.get(count_key, 0) - before.get(count_key, 0)
        if count > 0:
            means[base + ("{" + labels if labels else "")] = {
                "count": count, "mean_ms": 1000 * (total - before.get(key, 0)) / count}
    return means


def scheduled_total(samples):
    return sum(v for k, v in samples.items()
               if k.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' in k)


def run_profile(cluster, tools, profile, pods, run, two_gpu_every=0):
    cluster.start_scheduler(profile_config(tools, cluster, profile, run))
    api = ApiConnection(cluster)
    listing = api.call("GET", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods?limit=1")
    watch = BindWatch(cluster, listing["metadata"]["resourceVersion"])
    sched_before, tidal_before = cluster.scheduler_metrics(), cluster.serve_metrics()
    cpu_before = process_cpu(cluster)
    names = [f"{profile}-{i:05d}" for i in range(pods)]
    per_second, stop_sampling = [], threading.Event()

    def sample():
        last = scheduled_total(sched_before)
        while not stop_sampling.wait(1.0):
            now = scheduled_total(cluster.scheduler_metrics())
            per_second.append(now - last)
            last = now

    sampler = threading.Thread(target=sample, daemon=True)
    first_create = time.monotonic()
    sampler.start()

    def create(chunk):
        conn = ApiConnection(cluster)
        for name in chunk:
            i = int(name.rsplit("-", 1)[1])
            gpus = 2 if two_gpu_every and i % two_gpu_every == two_gpu_every - 1 else 1
            conn.call("POST", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods", bench_pod(name, gpus))

    with concurrent.futures.ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(create, [names[i::CLIENT_THREADS] for i in range(CLIENT_THREADS)]))
    created = time.monotonic()
    wait_until(f"{pods} pods bound ({profile})", lambda: watch.count() >= pods, 1800, 0.2)
    last_bind = watch.last()
    stop_sampling.set()
    sampler.join()
    sched_after, tidal_after = cluster.scheduler_metrics(), cluster.serve_metrics()
    cpu_after = process_cpu(cluster)
    watch.close()
    busy = [n for n in per_second if n > 0]
    result = {
        "profile": profile, "pods": pods,
        "create_s": created - first_create,
        "api_pods_per_s": pods / (last_bind - first_create),
        "scheduler_pods_per_s": statistics.mean(busy) if busy else 0.0,
        "scheduler_means": histogram_means(sched_before, sched_after, "scheduler_"),
        "tidal_means": histogram_means(tidal_before, tidal_after, "tidal_extender_"),
        "cpu_s": {k: cpu_after[k] - cpu_before.get(k, 0) for k in cpu_after},
    }
    cluster.sup.stop("kube-scheduler")
    api.call("DELETE", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods?gracePeriodSeconds=0")
    wait_until("pods deleted", lambda: not api.call(
        "GET", f"/api/v1/namespaces/{TEST_NAMESPACE}/pods?limit=1")["items"], 300, 0.5)
    return result


def summary_line(r):
    s = r["scheduler_means"]
    algo = next((v["mean_ms"] for k, v in s.items()
                 if k.startswith("scheduler_scheduling_algorithm_duration_seconds")), float("nan"))
    tidal = r["tidal_means"]

    def verb(name):
        v = [x["mean_ms"] for k, x in tidal.items() if f'verb="{name}"' in k]
        return v[0] if v else float("nan")

    bind = [x["mean_ms"] for k, x in tidal.items()
            if k.startswith("tidal_extender_bind_duration_seconds") and 'outcome="bound"' in k]
    cpu = " ".join(f"{k}={v:.1f}" for k, v in sorted(r["cpu_s"].items()))
    return (f"{r['profile']:<7} {r['api_pods_per_s']:7.1f} pods/s (API)  "
            f"{r['scheduler_pods_per_s']:7.1f} pods/s (scheduler)  create {r['create_s']:5.1f} s  "
            f"algorithm {algo:6.2f} ms  tidal filter {verb('filter'):.2f} prioritize "
            f"{verb('prioritize'):.2f} bind {bind[0] if bind else float('nan'):.2f} ms  CPU s: {cpu}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build", "release"))
    parser.add_argument("--out", help="write every run's figures here as JSON")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--profiles", default=",".join(PROFILES),
                        help="which profiles to run, in this order each round (alone first)")
    parser.add_argument("--device-plugin-mark", action="store_true",
                        help="first bind one pod marked as Tidal's device plugin marks the pods "
                        "it gave their GPUs, so that the policy's fgd acts")
    parser.add_argument("--two-gpu-every", type=int, default=0, metavar="N",
                        help="every Nth pod requests 2 GPUs (0: every pod 1): more than one "
                        "task type for fgd's learned workload")
    args = parser.parse_args()
    profiles = tuple(p for p in args.profiles.split(",") if p)
    if not profiles or profiles[0] != "alone" or any(p not in PROFILES for p in profiles):
        sys.exit(f"scheduler-throughput: --profiles: expected 'alone' first, then any of {PROFILES}")

    build = os.path.abspath(args.build)
    missing = missing_tools()
    kube_dir, why = find_kube_binaries(SOURCE_DIR, os.path.join(build, "k8s-bin"))
    if missing or not kube_dir:
        sys.exit(f"scheduler-throughput: missing {', '.join(missing) or why}")
    tidal = os.path.join(build, "src", "cli", "tidal")
    tools = Tools(kube_dir, tidal, tidal,
                  os.path.join(build, "tests", "nvml_stub", "lib", "libnvidia-ml.so.1"), SOURCE_DIR)
    workdir = args.workdir or tempfile.mkdtemp(prefix="tidal-throughput-")
    null_extender = os.path.join(build, "bench", "null_extender")
    if "null" in profiles and not os.access(null_extender, os.X_OK):
        sys.exit(f"scheduler-throughput: {null_extender} not built (ninja null_extender)")
    cluster = BenchCluster(tools, bench_nodes(args.nodes), workdir)
    cluster.null_extender = null_extender
    results = []
    try:
        cluster.start()
        print(f"{args.nodes} nodes × {GPUS_PER_NODE} GPUs, {args.pods} pods a run, "
              f"{args.rounds} rounds", flush=True)
        if args.device_plugin_mark:
            mark_device_plugin(cluster, next(iter(cluster.nodes)))
        for rnd in range(args.rounds):
            for profile in profiles:
                r = run_profile(cluster, tools, profile, args.pods, len(results),
                                args.two_gpu_every)
                r["round"] = rnd
                results.append(r)
                print(summary_line(r), flush=True)
    finally:
        cluster.stop()
    for key in ("api_pods_per_s", "scheduler_pods_per_s"):
        alone = statistics.median(r[key] for r in results if r["profile"] == "alone")
        for profile in profiles[1:]:
            with_tidal = statistics.median(r[key] for r in results if r["profile"] == profile)
            ratio = with_tidal / alone if alone > 0 else float("nan")
            print(f"{key}: {profile} / alone = {with_tidal:.1f} / {alone:.1f} = {ratio:.2f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"nodes": args.nodes, "pods": args.pods, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
