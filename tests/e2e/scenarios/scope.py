"""What the extender is asked about: a pod of our scheduler without GPUs is bound
by kube-scheduler alone (managedResources: nvidia.com/gpu), and a pod for the
default scheduler is never ours to bind or annotate."""
import time

from harness import GPU_ANNOTATION, SCHEDULER_NAME, TEST_NAMESPACE, a10_node, metric_sum
from pods import cpu_pod, create, gpu_pod, node_of, wait_bound
from procs import wait_until

QUIET_S = 5


def nodes():
    return [a10_node("node-0", (0.10, 0.12, 0.08, 0.14)),
            a10_node("node-1", (0.09, 0.11, 0.13, 0.10))]


def extender_calls(cluster):
    """Requests serve has answered (every verb, every outcome) and binds it has made."""
    m = cluster.serve_metrics()
    return (metric_sum(m, "tidal_extender_requests_total"),
            metric_sum(m, "tidal_extender_binds_total"))


def run(cluster, checks):
    api = cluster.api
    before = extender_calls(cluster)
    create(api, [cpu_pod("no-gpu")])
    pod = wait_bound(api, "no-gpu", 60)
    checks.check(extender_calls(cluster) == before,
                 "a pod without nvidia.com/gpu is bound without reaching the extender",
                 f"(requests, binds) {before} -> {extender_calls(cluster)}")
    annotations = pod["metadata"].get("annotations") or {}
    checks.check(GPU_ANNOTATION not in annotations, "the pod without GPUs carries no tidal.io/gpus",
                 annotations)
    attempts = metric_sum(cluster.scheduler_metrics(), "scheduler_schedule_attempts_total",
                          profile=SCHEDULER_NAME, result="scheduled")
    checks.check(attempts >= 1, f"kube-scheduler scheduled it under the profile {SCHEDULER_NAME}",
                 attempts)

    created = api.create_pod(TEST_NAMESPACE, gpu_pod("default-scheduler", scheduler=None))
    before = extender_calls(cluster)
    time.sleep(QUIET_S)
    checks.check(extender_calls(cluster) == before,
                 "a pod for the default scheduler never reaches the extender",
                 f"(requests, binds) {before} -> {extender_calls(cluster)}")
    # A GPU pod of ours after it: our scheduler is busy and still leaves it alone.
    create(api, [gpu_pod("ours")])
    wait_bound(api, "ours", 60)
    # serve counts a bind after the API server has answered it, so the pod can be
    # seen bound a moment before the counter moves.
    def advanced():
        calls = extender_calls(cluster)
        return calls if calls[0] > before[0] and calls[1] > before[1] else None
    try:
        calls = wait_until("serve's request and bind counters to advance", advanced, 10)
    except TimeoutError:
        calls = extender_calls(cluster)
    checks.check(calls[0] > before[0] and calls[1] > before[1],
                 "our GPU pod did go through filter and bind", f"{before} -> {calls}")
    pod = api.pod(TEST_NAMESPACE, "default-scheduler")
    checks.check(node_of(pod) is None, "the default scheduler's pod is not bound by ours",
                 node_of(pod))
    checks.check(pod["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"],
                 "the default scheduler's pod is never touched (no annotation, no status)",
                 f"annotations {pod['metadata'].get('annotations')}, "
                 f"status {pod.get('status')}")
    events = api.events(TEST_NAMESPACE, "default-scheduler")
    checks.check(not events, "no event about the default scheduler's pod",
                 [e.get("message") for e in events])
