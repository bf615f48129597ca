"""Prometheus killed while pods arrive (docs/design.md#fallback): pods keep being bound in
stage 1 (remaining GPUs); after fallback.stage2After, only on the golden pool.
Without any golden node, stage 2 must not reject everything: pods are still
bound (stage 1's ranking) and serve's /metrics raises the fallback alert."""
import time

from checks import ledger_of
from harness import TEST_NAMESPACE, a10_node, duration_s
from pods import create, failed_scheduling, gpu_pod, node_of, outside_pool, wait_bound
from procs import wait_until

HOT = "node-0"
STAGE_GAUGE = "tidal_extender_fallback_stage"
# 1 while stage 2 is due but no node is in the golden pool.
GOLDEN_EMPTY_GAUGE = "tidal_extender_fallback_golden_pool_empty"
COOL_USAGE = ((0.10, 0.12, 0.08, 0.14), (0.09, 0.11, 0.13, 0.10), (0.12, 0.08, 0.10, 0.15),
              (0.14, 0.10, 0.09, 0.11), (0.08, 0.13, 0.12, 0.10))
BIND_TIMEOUT_S = 30
GOLDEN_LABEL = "tidal.io/pool"  # fallback.goldenPool of deploy/scheduler/policy.yaml


def _nodes(golden):
    labels = {GOLDEN_LABEL: "golden"}
    nodes = [a10_node(HOT, (0.93, 0.95, 0.96, 0.94))]
    for i, usage in enumerate(COOL_USAGE, start=1):
        nodes.append(a10_node(f"node-{i}", usage, labels if f"node-{i}" in golden else None))
    return nodes


def gauge(samples, name):
    """The value of an unlabelled gauge, None when /metrics does not have it."""
    return samples.get(name)


def shown(value):
    return "absent from /metrics" if value is None else value


def stage(cluster):
    return gauge(cluster.serve_metrics(), STAGE_GAUGE)


def bind_one(cluster, checks, name, what, make_pod=gpu_pod):
    """Creates one pod and waits for it to be bound; records a failure with its
    FailedScheduling message otherwise. Returns its node or None."""
    api = cluster.api
    create(api, [make_pod(name)])
    try:
        node = node_of(wait_bound(api, name, BIND_TIMEOUT_S))
    except TimeoutError:
        messages = [e.get("message") for e in failed_scheduling(api, name)]
        checks.check(False, f"{name} ({what}) is bound", f"Pending; events {messages}")
        return None
    checks.check(node != HOT, f"{name} ({what}) is bound, not on the hot node", node)
    print(f"e2e: {name} -> {node}", flush=True)
    return node


def lose_prometheus(cluster, checks, make_pod=gpu_pod):
    """Kills Prometheus with pods arriving; returns when serve is in stage 1."""
    bind_one(cluster, checks, "before", "Prometheus up", make_pod)
    now = stage(cluster)
    checks.check(now == 0, "stage 0 while Prometheus is up", now)
    cluster.stop_prometheus()
    bind_one(cluster, checks, "after-kill", "Prometheus just killed", make_pod)
    # A fetch every metricCacheTTL; the first that fails starts stage 1.
    policy = cluster.policy
    wait_s = duration_s(policy["metricCacheTTL"]) + 2 * duration_s(policy["queryTimeout"]) + 5
    wait_until("fallback stage 1", lambda: stage(cluster) == 1, wait_s, 0.5)
    entered = time.monotonic()
    print("e2e: serve is in fallback stage 1", flush=True)
    for i in range(2):
        bind_one(cluster, checks, f"stage1-{i}", "fallback stage 1", make_pod)
    return entered


def recover(cluster, checks):
    """Prometheus back: the next fetch returns serve to stage 0."""
    cluster.start_prometheus()
    wait_s = duration_s(cluster.policy["metricCacheTTL"]) + 10
    try:
        wait_until("fallback stage 0 again", lambda: stage(cluster) == 0, wait_s, 0.5)
        checks.check(True, "stage 0 once Prometheus is back")
    except TimeoutError as e:
        checks.check(False, "stage 0 once Prometheus is back", str(e))
    bind_one(cluster, checks, "recovered", "Prometheus back")


def check_no_gpu_shared(checks, cluster):
    ledger = ledger_of(cluster, cluster.api.pods(TEST_NAMESPACE))
    shared = {f"{n}/gpu{i}": h for (n, i), h in ledger.holders.items() if len(h) > 1}
    checks.check(not shared, "no GPU is named by more pods than its device slots (1)", shared)


class WithGoldenPool:
    GOLDEN = ("node-4", "node-5")

    @staticmethod
    def nodes():
        return _nodes(WithGoldenPool.GOLDEN)

    @staticmethod
    def load_golden_nodes(cluster):
        """Two GPUs taken on each golden node: stage 1's ranking (most remaining GPUs
        first) then prefers the others, so only the golden-pool rule sends a pod
        there in stage 2."""
        for node in WithGoldenPool.GOLDEN:
            for i in range(2):
                create(cluster.api, [gpu_pod(f"load-{node}-{i}", node=node)])
                wait_bound(cluster.api, f"load-{node}-{i}", BIND_TIMEOUT_S)

    @staticmethod
    def off_golden_pod(name):
        """The pods before stage 2 keep off the golden nodes, whose free GPUs (4) are
        then all there for the stage 2 pods."""
        return outside_pool(gpu_pod(name), GOLDEN_LABEL)

    @staticmethod
    def run(cluster, checks):
        WithGoldenPool.load_golden_nodes(cluster)
        lose_prometheus(cluster, checks, WithGoldenPool.off_golden_pod)
        stage2_s = duration_s(cluster.policy["fallback"]["stage2After"])
        wait_until("fallback stage 2", lambda: stage(cluster) == 2, stage2_s + 10, 0.5)
        print("e2e: serve is in fallback stage 2", flush=True)
        placed = {}
        for i in range(3):
            placed[f"stage2-{i}"] = bind_one(cluster, checks, f"stage2-{i}", "fallback stage 2")
        golden = WithGoldenPool.GOLDEN
        outside = {n: node for n, node in placed.items() if node and node not in golden}
        checks.check(not outside, f"stage 2 binds only to the golden pool {golden}", outside)
        check_no_gpu_shared(checks, cluster)
        recover(cluster, checks)


class WithoutGoldenPool:
    @staticmethod
    def nodes():
        return _nodes(())

    @staticmethod
    def run(cluster, checks):
        entered = lose_prometheus(cluster, checks)
        # Past stage2After, whatever stage serve reports: with an empty golden pool
        # it must keep stage 1's ranking rather than reject every node.
        stage2_s = duration_s(cluster.policy["fallback"]["stage2After"])
        time.sleep(max(0.0, entered + stage2_s + 2 - time.monotonic()))
        for i in range(3):
            bind_one(cluster, checks, f"late-{i}", "fallback past stage2After, no golden node")
        samples = cluster.serve_metrics()
        checks.check(gauge(samples, STAGE_GAUGE) not in (None, 0),
                     f"serve's /metrics reports the fallback ({STAGE_GAUGE} >= 1)",
                     shown(gauge(samples, STAGE_GAUGE)))
        checks.check(gauge(samples, GOLDEN_EMPTY_GAUGE) == 1,
                     f"serve's /metrics raises the alert {GOLDEN_EMPTY_GAUGE} = 1",
                     shown(gauge(samples, GOLDEN_EMPTY_GAUGE)))
        check_no_gpu_shared(checks, cluster)
