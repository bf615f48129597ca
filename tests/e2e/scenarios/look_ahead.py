"""The look-ahead on the real control plane: `tidal serve` watches the unbound
pods, orders them as kube-scheduler's queue does, and places each pod with the
next one in view.

Two nodes: two-free has two usable GPUs, one-free one (the others nearly full).
A 1-GPU pod is first in the queue (a higher priority), a 2-GPU pod second. By
live load alone the 1-GPU pod goes to two-free, the emptier node, and the 2-GPU
pod then fits nowhere; looking ahead, the 1-GPU pod takes one-free and the 2-GPU
pod two-free. kube-scheduler is stopped while the pods are created, so that both
wait in its queue when it starts."""
import time

from harness import TEST_NAMESPACE, a10_node, metric_sum
from pods import create, gpu_indices, gpu_pod, node_of, wait_bound

BIND_S = 60
HIGH = "tidal-e2e-first"


def nodes():
    return [a10_node("two-free", (0.95, 0.95, 0.05, 0.05)),
            a10_node("one-free", (0.95, 0.95, 0.95, 0.05))]


def _prioritized(pod, priority_class):
    pod["spec"]["priorityClassName"] = priority_class
    return pod


def run(cluster, checks):
    api = cluster.api
    checks.check(cluster.policy.get("lookAhead", True),
                 "the deploy's policy looks ahead", cluster.policy.get("lookAhead"))
    api.post("/apis/scheduling.k8s.io/v1/priorityclasses",
             {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
              "metadata": {"name": HIGH}, "value": 1000})
    cluster.sup.stop("kube-scheduler")
    create(api, [_prioritized(gpu_pod("small", gpus=1, gpu_memory="16Gi"), HIGH)])
    create(api, [gpu_pod("pair", gpus=2, gpu_memory="16Gi")])
    time.sleep(1)  # serve's watch of the unbound pods sees both
    cluster.start_scheduler()
    small = wait_bound(api, "small", BIND_S)
    pair = wait_bound(api, "pair", BIND_S)
    checks.check(node_of(small) == "one-free",
                 "the 1-GPU pod leaves the node with two free GPUs to the 2-GPU pod queued after it",
                 f"small on {node_of(small)}, GPUs {gpu_indices(small)}")
    checks.check(node_of(pair) == "two-free" and sorted(gpu_indices(pair) or []) == [2, 3],
                 "the 2-GPU pod gets the two free GPUs",
                 f"pair on {node_of(pair)}, GPUs {gpu_indices(pair)}")
    moved = metric_sum(cluster.serve_metrics(), "tidal_extender_look_ahead_total",
                       outcome="moved")
    checks.check(moved >= 1, "serve counts the choice the look-ahead moved", moved)
    pods = {p["metadata"]["name"]: node_of(p) for p in api.pods(TEST_NAMESPACE)}
    print(f"e2e look_ahead: placements {pods}", flush=True)
