"""The brief's cluster: 8 nodes × 4 A10 24 GB, three hot (> 90 % GPU memory on
every GPU), five cool; the brief's two Jobs, then a burst of 50 one-GPU pods,
more than the cool nodes' 20 device slots."""
import os
import time
from collections import Counter

from checks import check_events_unmangled, check_gpu_placements, ledger_of
from harness import TEST_NAMESPACE, a10_node, metric_sum
from pods import create, gpu_pod, job_pods, name_of, node_of, wait_settled

HOT = ("node-1", "node-4", "node-6")
HOT_USAGE = (0.92, 0.94, 0.95, 0.97)
# Low and varied, so that GPU choice and node ranking have something to tell apart.
COOL_USAGE = ((0.08, 0.10, 0.12, 0.15), (0.15, 0.09, 0.11, 0.13), (0.10, 0.14, 0.08, 0.12),
              (0.12, 0.08, 0.15, 0.10), (0.09, 0.13, 0.10, 0.14))
BURST = 50


def nodes():
    cool = iter(COOL_USAGE)
    return [a10_node(f"node-{i}", HOT_USAGE if f"node-{i}" in HOT else next(cool))
            for i in range(8)]


def run(cluster, checks):
    api = cluster.api
    examples = os.path.join(cluster.tools.source_dir, "examples", "k8s")
    jobs = job_pods(os.path.join(examples, "task-heavy.yaml")) + \
        job_pods(os.path.join(examples, "task-nvlink.yaml"))
    burst = [gpu_pod(f"burst-{i:02d}", gpu_memory="8Gi") for i in range(BURST)]
    started = time.monotonic()
    create(api, jobs + burst)
    print(f"e2e: created {len(jobs)} Job pods and {BURST} burst pods in "
          f"{time.monotonic() - started:.1f} s", flush=True)
    names = [name_of(p) for p in jobs + burst]
    pods = wait_settled(api, names, timeout_s=240)
    _report(cluster, pods, time.monotonic() - started)

    placed = list(pods.values())
    check_gpu_placements(checks, cluster, placed)
    on_hot = {n: node_of(p) for n, p in pods.items() if node_of(p) in HOT}
    checks.check(not on_hot, "no pod is bound to a hot node", on_hot)
    _check_pending(checks, cluster, pods)
    check_events_unmangled(checks, api.events(TEST_NAMESPACE))


def _check_pending(checks, cluster, pods):
    """Every pending pod was told why, and none of them would fit where a GPU is left."""
    api = cluster.api
    pending = [p for p in pods.values() if not node_of(p)]
    silent = []
    for p in pending:
        events = [e for e in api.events(TEST_NAMESPACE, name_of(p))
                  if e.get("reason") == "FailedScheduling" and e.get("message")]
        if not events:
            silent.append(name_of(p))
    checks.check(not silent, f"each of the {len(pending)} pending pods has a FailedScheduling "
                 "event with a reason", silent)
    ledger = ledger_of(cluster, pods.values())
    fits = {name_of(p): node for p in pending if (node := ledger.could_take(p))}
    free = {f"{n}/gpu{i}": f"{ledger.free(n, i) / (1 << 30):.1f} GiB free"
            for (n, i), holders in ledger.holders.items()
            if not holders and n not in HOT}
    checks.check(not fits, "every pod that can fit is bound (none pending beside a free GPU)",
                 f"pending pods that fit: {fits}; unclaimed cool GPUs: {free}" if fits else None)


def _report(cluster, pods, elapsed):
    per_node = Counter(node_of(p) for p in pods.values() if node_of(p))
    pending = sorted(n for n, p in pods.items() if not node_of(p))
    print(f"e2e: settled after {elapsed:.1f} s: {sum(per_node.values())} bound "
          f"{dict(sorted(per_node.items()))}, {len(pending)} pending "
          f"({', '.join(pending[:5])}{', ...' if len(pending) > 5 else ''})", flush=True)
    reasons = sorted({e["message"] for e in cluster.api.events(TEST_NAMESPACE)
                      if e.get("reason") == "FailedScheduling"})
    for message in reasons[:4]:
        print(f"e2e: FailedScheduling: {message}", flush=True)
    m = cluster.scheduler_metrics()
    count = metric_sum(m, "scheduler_e2e_scheduling_duration_seconds_count")
    total = metric_sum(m, "scheduler_e2e_scheduling_duration_seconds_sum")
    if count:
        print(f"e2e: kube-scheduler: {count:.0f} attempts, mean {1000 * total / count:.1f} ms",
              flush=True)
