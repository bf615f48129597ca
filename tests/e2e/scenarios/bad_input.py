"""A malformed pod annotation: the pod stays Pending and its event names the
annotation, so that its owner can tell what to fix."""
import time

from harness import TEST_NAMESPACE, a10_node
from pods import (create, failed_scheduling, gpu_pod, node_of, scheduled_condition, wait_bound,
                  wait_failed_scheduling)

ANNOTATION = "ai.gpu-reject-threshold"


def nodes():
    return [a10_node("node-0", (0.10, 0.12, 0.08, 0.14)),
            a10_node("node-1", (0.09, 0.11, 0.13, 0.10))]


def run(cluster, checks):
    api = cluster.api
    create(api, [gpu_pod("bad-threshold", annotations={ANNOTATION: "abc"})])
    events = wait_failed_scheduling(api, "bad-threshold", timeout_s=60)
    messages = [e.get("message", "") for e in events]
    checks.check(any(ANNOTATION in m for m in messages),
                 f"the FailedScheduling event names the annotation {ANNOTATION}", messages)

    # A well-formed pod behind it is bound: the cluster works, the pod is the problem.
    create(api, [gpu_pod("good")])
    wait_bound(api, "good", timeout_s=60)
    time.sleep(2)
    pod = api.pod(TEST_NAMESPACE, "bad-threshold")
    condition = scheduled_condition(pod) or {}
    checks.check(node_of(pod) is None and condition.get("reason") == "Unschedulable",
                 "the pod stays Pending (PodScheduled False, Unschedulable)",
                 f"nodeName {node_of(pod)}, condition {condition}")
    print(f"e2e: bad-threshold: {failed_scheduling(api, 'bad-threshold')[-1].get('message')}",
          flush=True)
