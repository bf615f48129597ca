"""Assertions the scenarios share. A failed check is recorded with what was
observed and the scenario goes on, so one run reports every broken promise."""
import re

from harness import GPU_RESOURCE
from pods import gpu_indices, name_of, node_of

_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


class Checks:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, ok, what, observed=None):
        if ok:
            self.passed += 1
            print(f"  ok   {what}", flush=True)
            return True
        detail = what if observed is None else f"{what}; observed: {observed}"
        self.failures.append(detail)
        print(f"  FAIL {detail}", flush=True)
        return False

    def error(self, text):
        self.failures.append(text)
        print(f"  ERROR {text}", flush=True)

    @property
    def ok(self):
        return not self.failures


def parse_quantity(text):
    m = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?", text.strip())
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    unit = m.group(2)
    scale = _BINARY.get(unit) or _DECIMAL.get(unit) or 1
    return int(float(m.group(1)) * scale)


def gpu_count(pod):
    total = 0
    for c in pod["spec"]["containers"]:
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(GPU_RESOURCE) or \
            (res.get("requests") or {}).get(GPU_RESOURCE) or 0
        total += int(value)
    return total


def _env(pod):
    return {e["name"]: e.get("value", "") for c in pod["spec"]["containers"]
            for e in c.get("env") or []}


def memory_need(pod, policy):
    """GPU memory per GPU the pod needs, as the policy reads it: the declared
    ai.gpu-memory, else the estimate for its AI_LOAD_TYPE, else the default."""
    declared = (pod["metadata"].get("annotations") or {}).get("ai.gpu-memory")
    if declared:
        return parse_quantity(declared)
    estimate = policy["memoryEstimate"]
    load_type = _env(pod).get("AI_LOAD_TYPE")
    return parse_quantity(str(estimate.get("byLoadType", {}).get(load_type, estimate["default"])))


def requires_nvlink(pod):
    notes = pod["metadata"].get("annotations") or {}
    return (_env(pod).get("AI_NV_LINK_REQUIRED", "").lower() == "true"
            or notes.get("ai.nvlink-required", "").lower() == "true")


def reject_fraction(policy):
    return policy["thresholds"]["gpuMemory"]["reject"] - policy["rejectThresholdSafetyMargin"]


class GpuLedger:
    """Per GPU of every node: the pods the tidal.io/gpus annotations place on it and
    the memory they declared, on top of what the stub script says is used."""

    def __init__(self, nodes, policy):
        self.nodes = nodes
        self.policy = policy
        self.holders = {(n, i): [] for n, node in nodes.items() for i in range(len(node.gpus))}
        self.declared = {key: 0 for key in self.holders}
        self.slots_used = {n: 0 for n in nodes}

    def add(self, pod):
        node = node_of(pod)
        self.slots_used[node] = self.slots_used.get(node, 0) + gpu_count(pod)
        for i in gpu_indices(pod) or []:
            key = (node, i)
            self.holders.setdefault(key, []).append(name_of(pod))
            self.declared[key] = self.declared.get(key, 0) + memory_need(pod, self.policy)

    def free(self, node, i):
        return self.nodes[node].gpus[i].free - self.declared[(node, i)]

    def node_load(self, node):
        gpus = self.nodes[node].gpus
        used = sum(g.used for g in gpus) + sum(self.declared[(node, i)] for i in range(len(gpus)))
        return used / sum(g.total for g in gpus)

    def could_take(self, pod):
        """A node where the pod fits by the rules Tidal documents (a free device slot
        on each of k GPUs with enough free memory, node load under the reject
        threshold, NVLink when required), or None."""
        k, need = gpu_count(pod), memory_need(pod, self.policy)
        if requires_nvlink(pod) and k >= 2:
            return None  # the fake nodes are PCIe only: no NVLinked pair anywhere
        for name, node in self.nodes.items():
            if len(node.gpus) - self.slots_used[name] < k:
                continue
            if self.node_load(name) > reject_fraction(self.policy):
                continue
            fitting = [i for i in range(len(node.gpus))
                       if not self.holders[(name, i)] and self.free(name, i) >= need]
            if len(fitting) >= k:
                return name
        return None


def ledger_of(cluster, pods):
    ledger = GpuLedger(cluster.nodes, cluster.policy)
    for pod in pods:
        if node_of(pod) and gpu_count(pod) > 0:
            ledger.add(pod)
    return ledger


def check_gpu_placements(checks, cluster, pods):
    """The bind promises: every bound GPU pod names its GPUs, each with room for the
    pod's need, no GPU named by more pods than its one device slot, and no GPU
    holding more declared memory than it has."""
    bound = [p for p in pods if node_of(p) and gpu_count(p) > 0]
    unannotated = [name_of(p) for p in bound if gpu_indices(p) is None]
    checks.check(not unannotated, "every bound GPU pod carries tidal.io/gpus", unannotated)
    bad_count, no_room = [], []
    for p in bound:
        node, indices, need = node_of(p), gpu_indices(p) or [], memory_need(p, cluster.policy)
        if indices and (len(indices) != gpu_count(p) or len(set(indices)) != len(indices)):
            bad_count.append(f"{name_of(p)}: {indices} for {gpu_count(p)} GPUs")
        gpus = cluster.nodes[node].gpus
        for i in indices:
            if i >= len(gpus) or gpus[i].free < need:
                free = gpus[i].free / (1 << 30) if i < len(gpus) else "no such GPU"
                no_room.append(f"{name_of(p)} on {node} GPU {i}: free {free} GiB < need "
                               f"{need / (1 << 30):.1f} GiB")
    checks.check(not bad_count, "tidal.io/gpus names one distinct GPU per requested GPU",
                 bad_count)
    checks.check(not no_room, "every GPU named has the free memory (stub script) the pod needs",
                 no_room)
    ledger = ledger_of(cluster, pods)
    print_placements(ledger)
    shared = {f"{n}/gpu{i}": names for (n, i), names in ledger.holders.items() if len(names) > 1}
    checks.check(not shared, "no GPU is named by more pods than its device slots (1)", shared)
    over = {f"{n}/gpu{i}": f"used {cluster.nodes[n].gpus[i].used / (1 << 30):.1f} GiB + declared "
            f"{ledger.declared[(n, i)] / (1 << 30):.1f} GiB > total "
            f"{cluster.nodes[n].gpus[i].total / (1 << 30):.1f} GiB"
            for (n, i) in ledger.holders if ledger.free(n, i) < 0}
    checks.check(not over, "no GPU holds more declared memory than its total", over)
    return ledger


def print_placements(ledger):
    """Which pods each GPU holds, by tidal.io/gpus: what a failed check is about."""
    for node in sorted(ledger.nodes):
        gpus = [f"gpu{i}: {','.join(ledger.holders[(node, i)]) or '-'}"
                for i in range(len(ledger.nodes[node].gpus))]
        print(f"e2e: {node}: {' | '.join(gpus)}", flush=True)


def check_events_unmangled(checks, events):
    """kube-scheduler formats the extender's reasons with a printf-style call: a `%`
    in a reason comes out as `%!o(MISSING)` and the like."""
    mangled = sorted({e["message"] for e in events if "%!" in (e.get("message") or "")})
    checks.check(not mangled, "no event message has a mangled `%` (`%!`)",
                 f"{len(mangled)} distinct messages, e.g. {mangled[:2]}")
