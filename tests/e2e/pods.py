"""Pods the scenarios create, and waiting for what the scheduler does with them."""
import copy
import time

import yaml

from harness import GPU_ANNOTATION, GPU_RESOURCE, SCHEDULER_NAME, TEST_NAMESPACE
from procs import wait_until

# Never pulled: there is no kubelet. A real image name keeps the pod valid.
IMAGE = "registry.k8s.io/pause:3.9"


def gpu_pod(name, gpus=1, gpu_memory="8Gi", annotations=None, labels=None,
            scheduler=SCHEDULER_NAME, node=None):
    notes = {} if gpu_memory is None else {"ai.gpu-memory": gpu_memory}
    notes.update(annotations or {})
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": dict(labels or {}), "annotations": notes},
           "spec": {"containers": [{"name": "main", "image": IMAGE, "resources": {
               "limits": {GPU_RESOURCE: str(gpus)}}}]}}
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    if node:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def outside_pool(pod, label):
    """The pod with a required node affinity for nodes without the label."""
    term = {"matchExpressions": [{"key": label, "operator": "DoesNotExist"}]}
    pod["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return pod


def cpu_pod(name, scheduler=SCHEDULER_NAME):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "main", "image": IMAGE, "resources": {
               "requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    return pod


def job_pods(path):
    """The pods a Job controller would create at once (there is none here): the
    template as bare pods, min(parallelism, completions) of them, default 1."""
    with open(path, encoding="utf-8") as f:
        job = yaml.safe_load(f)
    spec = job["spec"]
    parallelism = spec.get("parallelism", 1)
    count = parallelism if spec.get("completions") is None else min(parallelism,
                                                                      spec["completions"])
    pods = []
    for i in range(count):
        template = copy.deepcopy(spec["template"])
        meta = template.get("metadata") or {}
        meta["name"] = f"{job['metadata']['name']}-{i}"
        meta.setdefault("labels", {})["job-name"] = job["metadata"]["name"]
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                     "spec": template["spec"]})
    return pods


def create(api, pods, namespace=TEST_NAMESPACE):
    for pod in pods:
        api.create_pod(namespace, pod)


def name_of(pod):
    return pod["metadata"]["name"]


def node_of(pod):
    return pod["spec"].get("nodeName") or None


def scheduled_condition(pod):
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == "PodScheduled":
            return c
    return None


def gpu_indices(pod):
    """The GPU indices tidal.io/gpus names, or None without the annotation."""
    text = (pod["metadata"].get("annotations") or {}).get(GPU_ANNOTATION)
    if text is None:
        return None
    return [int(i) for i in text.split(",") if i.strip()]


def wait_bound(api, name, timeout_s, namespace=TEST_NAMESPACE):
    return wait_until(f"pod {name} bound", lambda: _bound(api, namespace, name), timeout_s)


def _bound(api, namespace, name):
    pod = api.pod(namespace, name)
    return pod if node_of(pod) else None


def failed_scheduling(api, name, namespace=TEST_NAMESPACE):
    return [e for e in api.events(namespace, name) if e.get("reason") == "FailedScheduling"]


def wait_failed_scheduling(api, name, timeout_s, namespace=TEST_NAMESPACE):
    return wait_until(f"a FailedScheduling event of pod {name}",
                      lambda: failed_scheduling(api, name, namespace), timeout_s)


def wait_pending(api, name, reason, timeout_s, namespace=TEST_NAMESPACE):
    """Until the pod's PodScheduled condition is False with this reason."""
    seen = {}

    def pending():
        pod = api.pod(namespace, name)
        c = seen["condition"] = scheduled_condition(pod)
        return pod if c and c["status"] == "False" and c.get("reason") == reason else None
    try:
        return wait_until(f"pod {name} pending ({reason})", pending, timeout_s)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; its PodScheduled condition: {seen.get('condition')}") from None


def wait_settled(api, names, timeout_s, quiet_s=5, namespace=TEST_NAMESPACE):
    """Until every pod is bound or has a FailedScheduling event, and no pod has been
    bound for quiet_s: the scheduler has done what it will do with the burst.
    Returns {name: pod}."""
    deadline = time.monotonic() + timeout_s
    last_bound, since = None, time.monotonic()
    while True:
        pods = {name_of(p): p for p in api.pods(namespace) if name_of(p) in names}
        bound = frozenset(n for n, p in pods.items() if node_of(p))
        if bound != last_bound:
            last_bound, since = bound, time.monotonic()
        refused = {e["involvedObject"]["name"] for e in api.events(namespace)
                   if e.get("reason") == "FailedScheduling"}
        undecided = [n for n in names if n not in bound and n not in refused]
        if not undecided and time.monotonic() - since >= quiet_s:
            return pods
        if time.monotonic() >= deadline:
            raise TimeoutError(f"burst not settled after {timeout_s} s: {len(bound)} bound, "
                               f"undecided {sorted(undecided)[:10]}")
        time.sleep(0.5)
