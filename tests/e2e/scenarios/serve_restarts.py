"""`tidal serve` killed while pods arrive: with `ignorable: false` the pods wait
rather than being placed without the load check, and are bound once serve is
back; the restarted serve learns the GPUs already promised from the pod watch,
so no GPU is promised twice across the restart."""
import time

from checks import check_gpu_placements
from harness import TEST_NAMESPACE, a10_node
from pods import (create, gpu_pod, name_of, node_of, scheduled_condition, wait_bound,
                  wait_failed_scheduling, wait_pending)
from procs import wait_until

HOT = "node-0"
COOL_USAGE = ((0.10, 0.12, 0.08, 0.14), (0.09, 0.11, 0.13, 0.10), (0.12, 0.08, 0.10, 0.15),
              (0.14, 0.10, 0.09, 0.11))
# Covers kube-scheduler's 60 s flush of pods whose attempt failed with an error,
# should the node change not move them sooner.
REBIND_TIMEOUT_S = 100


def nodes():
    return [a10_node(HOT, (0.93, 0.95, 0.96, 0.94))] + \
        [a10_node(f"node-{i}", usage) for i, usage in enumerate(COOL_USAGE, start=1)]


def _pods(prefix, count):
    return [gpu_pod(f"{prefix}-{i}") for i in range(count)]


def _all_bound(api, names):
    pods = {name_of(p): p for p in api.pods(TEST_NAMESPACE)}
    return all(n in pods and node_of(pods[n]) for n in names)


def run(cluster, checks):
    api = cluster.api
    first = _pods("first", 5)
    create(api, first)
    for p in first:
        wait_bound(api, name_of(p), 60)

    cluster.kill_serve()
    down = _pods("down", 4)
    create(api, down)
    unasked = []
    for p in down:
        # kube-scheduler 1.23 says Unschedulable also when the extender cannot be asked.
        pod = wait_pending(api, name_of(p), "Unschedulable", 60)
        message = scheduled_condition(pod).get("message", "")
        if f"{cluster.serve_url}/filter" not in message:
            unasked.append(f"{name_of(p)}: {message}")
        wait_failed_scheduling(api, name_of(p), 60)
    checks.check(not unasked, "they wait because the extender cannot be asked", unasked)
    time.sleep(2)
    bound_early = [name_of(p) for p in down if node_of(api.pod(TEST_NAMESPACE, name_of(p)))]
    checks.check(not bound_early, "pods wait while serve is down (ignorable: false)",
                 bound_early)

    cluster.start_serve()
    restarted = time.monotonic()
    cluster.nudge_nodes()
    after = _pods("after", 3)
    create(api, after)
    names = [name_of(p) for p in first + down + after]
    try:
        wait_until("every pod bound after the restart", lambda: _all_bound(api, names),
                   REBIND_TIMEOUT_S, 0.5)
        print(f"e2e: all {len(names)} pods bound {time.monotonic() - restarted:.1f} s after "
              "the restart", flush=True)
        checks.check(True, "pods are bound after serve is started again")
    except TimeoutError:
        pending = [n for n in names if not node_of(api.pod(TEST_NAMESPACE, n))]
        checks.check(False, "pods are bound after serve is started again", f"pending {pending}")
    pods = [api.pod(TEST_NAMESPACE, n) for n in names]
    on_hot = [name_of(p) for p in pods if node_of(p) == HOT]
    checks.check(not on_hot, "no pod is bound to the hot node", on_hot)
    check_gpu_placements(checks, cluster, pods)
