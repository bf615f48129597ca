"""`tidal device-plugin` on the e2e cluster, with a fake kubelet for one node.

The plugin runs as deploy/device-plugin/daemonset.yaml runs it (its command and
arguments, --kubeconfig for --in-cluster, the kubelet directory, the NVML stand-in
scripted with the node's GPUs) against the real kube-apiserver; the kubelet's side
is tidal-fake-kubelet (src/deviceplugin/fake_kubelet_main.cc), which registers the
plugin, keeps ListAndWatch open and allocates as the device manager does. Pods are
bound by kube-scheduler through Tidal's /bind and never run (no kubelet), so they
stay Pending with spec.nodeName set: what the plugin looks for.

Checks: registration; each GPU of the node's NVML as --replicas devices
<UUID>::<k>; a one-GPU and a two-GPU pod bound through /bind get replicas of
exactly the GPUs in their tidal.io/gpus (UUIDs mapped from the stand-in's script),
NVIDIA_VISIBLE_DEVICES and CDI names with those UUIDs, and
tidal.io/gpus-allocated; pods without the annotation get the least-shared GPU;
a pod bound to another node is never taken; a critical XID and a lost GPU, scripted
in the stand-in, stream their GPU's devices Unhealthy, an application's XID does not,
and a GPU that answers again is Healthy again while the XID holds."""
import json
import os
import subprocess
import threading

import procs
from harness import GPU_RESOURCE, TEST_NAMESPACE, a10_node, load_yaml
from pods import create, gpu_indices, gpu_pod, scheduled_condition, wait_bound
from procs import wait_until

NODE = "node-0"
OTHER = "node-1"
# GPUs 0 and 3 are too full for an 8 GiB pod: Tidal's choice is never GPU 0, the one
# the stock least-shared rule would give first, so following the annotation shows.
USAGE = (0.95, 0.10, 0.15, 0.93)
ALLOCATED = "tidal.io/gpus-allocated"
CDI_KIND = "nvidia.com/gpu"
PLUGIN = f"device-plugin-{NODE}"
WAIT_S = 30


def nodes():
    # NODE advertises its GPUs × the plugin's replicas from the start, as its kubelet
    # would once the plugin registered: Tidal's view holds the device slots before
    # the first pod. (Patched only after registration, a pod filtered before Tidal's
    # node watch delivered the patch was judged on one slot per GPU and, rejected
    # on a node kube-scheduler already saw change, waited a minute for its retry.)
    node = a10_node(NODE, USAGE)
    node.slots_per_gpu = deploy_replicas()
    return [node, a10_node(OTHER, (0.10, 0.12, 0.08, 0.14))]


def deploy_replicas():
    """--replicas of deploy/device-plugin's DaemonSet."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    ds = load_yaml(os.path.join(source, "deploy", "device-plugin", "daemonset.yaml"))
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    return replicas_in(container["args"])


def uuids_of(node):
    """GPU index -> UUID, from the stand-in's script for the node (what NVML reports)."""
    out = {}
    for line in node.stub_script().splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == "gpu" and words[2] == "uuid":
            out[int(words[1])] = words[3]
    return out


def binary(env, what):
    path = os.environ.get(env)
    if not path or not os.path.isfile(path):
        raise RuntimeError(f"${env} must name {what} (CTest sets it; build it first): {path}")
    return path


def plugin_argv(cluster, dir_):
    """The DaemonSet's arguments (so --replicas and --resource are the deploy's),
    with this run's API, NVML, kubelet directory and node, a 1 s health poll, and
    CDI names to check."""
    ds = load_yaml(os.path.join(cluster.tools.source_dir, "deploy", "device-plugin",
                                "daemonset.yaml"))
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    replaced = {"--in-cluster": f"--kubeconfig={cluster.kubeconfig}",
                "--nvml-lib": f"--nvml-lib={cluster.tools.nvml_stub}"}
    args = [replaced.get(a.split("=", 1)[0], a) for a in container["args"]]
    command = binary("TIDAL_E2E_DEVICE_PLUGIN", "tidal-device-plugin")
    return [command, *args, f"--dir={dir_}", f"--node-name={NODE}", "--health-interval=1",
            f"--cdi-kind={CDI_KIND}"]


def replicas_in(argv):
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith("--replicas=")]
    return int(value)


class FakeKubelet:
    """tidal-fake-kubelet as a child: commands on its stdin, one JSON object a line
    from its stdout (read on a thread), stderr to a log."""

    def __init__(self, path, dir_, log_path):
        self.log = open(log_path, "ab")  # pylint: disable=consider-using-with
        # The child dies with the runner, as the harness's processes do.
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [path, "--dir", dir_, "--timeout", str(WAIT_S)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
            preexec_fn=procs._die_with_parent)  # pylint: disable=protected-access
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "error", "message": f"not JSON: {line!r}"}
            with self.lock:
                self.events.append(event)

    def of(self, kind):
        with self.lock:
            return [e for e in self.events if e.get("event") == kind]

    def wait(self, kind, count=1, timeout_s=WAIT_S):
        """The count-th event of this kind (from 1); a fatal error of the kubelet raises."""
        def arrived():
            errors = self.of("error")
            if errors:
                raise RuntimeError(f"fake kubelet: {errors[0]}")
            if self.proc.poll() is not None and len(self.of(kind)) < count:
                raise RuntimeError(f"fake kubelet exited ({self.proc.returncode})")
            found = self.of(kind)
            return found[count - 1] if len(found) >= count else None
        return wait_until(f"the fake kubelet's {kind} #{count}", arrived, timeout_s, 0.1)

    def allocate(self, size):
        before = len(self.of("allocation"))
        self.proc.stdin.write(f"allocate {size}\n")
        self.proc.stdin.flush()
        return self.wait("allocation", before + 1)

    def wait_list(self, want, what, after, timeout_s=WAIT_S):
        """The first list after the first `after` lists that equals `want`; None
        (with the last list printed) when none came."""
        try:
            return wait_until(what, lambda: want in [e["devices"] for e in self.of("list")[after:]],
                              timeout_s, 0.1)
        except TimeoutError:
            lists = self.of("list")
            print(f"e2e: last list of {len(lists)}: {lists[-1]['devices'] if lists else None}",
                  flush=True)
            return None

    def transcript(self):
        with self.lock:
            return "\n".join(json.dumps(e) for e in self.events)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        self.log.close()


def run(cluster, checks):
    dir_ = os.path.join(cluster.dir, f"kubelet-{NODE}")
    os.makedirs(dir_)
    kubelet = FakeKubelet(binary("TIDAL_E2E_FAKE_KUBELET", "tidal-fake-kubelet"), dir_,
                          cluster.sup.log_path(f"fake-kubelet-{NODE}"))
    try:
        _run(cluster, checks, kubelet, dir_)
    finally:
        if not checks.ok:
            print(f"e2e: the fake kubelet's transcript:\n{kubelet.transcript()}", flush=True)
        kubelet.stop()


def _run(cluster, checks, kubelet, dir_):
    node = cluster.nodes[NODE]
    uuids = uuids_of(node)
    kubelet.wait("serving")
    # The plugin's own copy of the node's script: the XIDs and the lost GPU below
    # are the plugin's to see, not the agent's (its metrics stay as they were).
    script = os.path.join(dir_, "nvml.script")
    with open(script, "w", encoding="utf-8") as f:
        f.write(node.stub_script())
    argv = plugin_argv(cluster, dir_)
    replicas = replicas_in(argv)
    cluster.sup.start(PLUGIN, argv, env=dict(os.environ, TIDAL_NVML_STUB_SCRIPT=script))

    reg = kubelet.wait("registered")
    checks.check((reg["version"], reg["resource"], reg["endpoint"], reg["preferred_allocation"])
                 == ("v1beta1", GPU_RESOURCE, "tidal-gpu.sock", True),
                 "the plugin registers nvidia.com/gpu, API v1beta1, with GetPreferredAllocation",
                 reg)
    everything = {f"{uuids[i]}::{k}": "Healthy" for i in uuids for k in range(replicas)}
    first = kubelet.wait("list")["devices"]
    checks.check(first == everything,
                 f"ListAndWatch lists each of the {len(uuids)} GPUs NVML reports as {replicas} "
                 "healthy devices <UUID>::<k>", first)
    # What the kubelet would report for the node once the plugin registered.
    slots = str(len(first))
    cluster.api.merge_patch(f"/api/v1/nodes/{NODE}/status", {"status": {
        "capacity": {GPU_RESOURCE: slots}, "allocatable": {GPU_RESOURCE: slots}}})

    held = _tidal_pods(cluster, checks, kubelet, uuids, replicas)
    _pods_without_annotation(cluster, checks, kubelet, uuids, replicas, held)
    _health(cluster, checks, kubelet, uuids, replicas, script)


def _devices_of(ids, uuids, replicas):
    """{GPU index: [replica numbers]} of device IDs, or None if one is not <UUID>::<k>
    of this node's GPUs with 0 <= k < replicas."""
    by_uuid = {u: i for i, u in uuids.items()}
    out = {}
    for device in ids:
        uuid, sep, k = device.rpartition("::")
        if not sep or uuid not in by_uuid or not k.isdigit() or int(k) >= replicas:
            return None
        out.setdefault(by_uuid[uuid], []).append(int(k))
    return out


def _check_grant(checks, cluster, alloc, name, gpus, size, uuids, replicas):
    """The allocation gave replicas of exactly `gpus` (GPU indices): devices, env,
    CDI names, and the pod's tidal.io/gpus-allocated."""
    what = f"pod {name} ({size} device(s), GPUs {gpus})"
    if not checks.check("error" not in alloc, f"{what}: GetPreferredAllocation and Allocate "
                        "succeed", alloc.get("error")):
        return
    devices = alloc["devices"]
    by_gpu = _devices_of(devices, uuids, replicas)
    checks.check(by_gpu is not None and len(devices) == size and len(set(devices)) == size
                 and sorted(by_gpu) == sorted(gpus),
                 f"{what}: the {size} device(s) are replicas of exactly those GPUs", devices)
    want = sorted(uuids[i] for i in gpus)
    visible = alloc["envs"].get("NVIDIA_VISIBLE_DEVICES", "")
    checks.check(sorted(visible.split(",")) == want,
                 f"{what}: NVIDIA_VISIBLE_DEVICES lists their UUIDs", visible)
    checks.check(sorted(alloc["cdi_devices"]) == [f"{CDI_KIND}={u}" for u in want],
                 f"{what}: the CDI devices name them", alloc["cdi_devices"])
    pod = cluster.api.pod(TEST_NAMESPACE, name)
    marked = (pod["metadata"].get("annotations") or {}).get(ALLOCATED)
    checks.check(marked is not None and sorted(int(i) for i in marked.split(",")) == sorted(gpus),
                 f"{what}: the pod is annotated {ALLOCATED} with them", marked)


def _tidal_pods(cluster, checks, kubelet, uuids, replicas):
    """Pods bound through /bind, each then admitted by the fake kubelet. Returns the
    devices held: {GPU index: replicas allocated}."""
    api = cluster.api
    # Bound first, to the other node: the earliest bound pod with a tidal.io/gpus,
    # which this node's plugin must never take.
    create(api, [gpu_pod("elsewhere", node=OTHER)])
    wait_bound(api, "elsewhere", 60)
    for name, size, memory in (("tidal-one", 1, "8Gi"), ("tidal-two", 2, "4Gi")):
        create(api, [gpu_pod(name, gpus=size, gpu_memory=memory, node=NODE)])
        pod = wait_bound(api, name, 60)
        chosen = gpu_indices(pod)
        if not checks.check(pod["spec"]["nodeName"] == NODE and chosen and len(chosen) == size,
                            f"pod {name} is bound to {NODE} through /bind with tidal.io/gpus "
                            f"naming {size} GPU(s)", (pod["spec"]["nodeName"], chosen)):
            continue
        checks.check(0 not in chosen, f"pod {name}: Tidal chose GPUs {chosen}, not GPU 0 (the "
                     "stock rule's first pick), so following the annotation is observable",
                     chosen)
        # With the binding the API server sets this condition; its time is how the
        # plugin orders the pods it may be admitting (docs/device-plugin.md).
        condition = scheduled_condition(pod) or {}
        checks.check(pod["status"].get("phase") == "Pending" and
                     condition.get("status") == "True" and condition.get("lastTransitionTime"),
                     f"pod {name} is Pending with PodScheduled True and its time",
                     (pod["status"].get("phase"), condition))
        _check_grant(checks, cluster, kubelet.allocate(size), name, chosen, size, uuids,
                     replicas)
    other = api.pod(TEST_NAMESPACE, "elsewhere")
    checks.check(ALLOCATED not in (other["metadata"].get("annotations") or {}),
                 f"the pod bound to {OTHER} is never taken by {NODE}'s plugin",
                 other["metadata"].get("annotations"))
    return _held(kubelet, uuids, replicas)


def _held(kubelet, uuids, replicas):
    held = {i: 0 for i in uuids}
    for alloc in kubelet.of("allocation"):
        for i, ks in (_devices_of(alloc.get("devices", []), uuids, replicas) or {}).items():
            held[i] += len(ks)
    return held


def _pods_without_annotation(cluster, checks, kubelet, uuids, replicas, held):
    """Pods put on the node by spec.nodeName (no scheduler, no tidal.io/gpus), one
    after the other: each gets the least-shared GPU, fewest replicas held, then
    lowest index (the stock plugin's rule)."""
    for name in ("direct-a", "direct-b"):
        pod = gpu_pod(name, gpu_memory=None, scheduler=None)
        pod["spec"]["nodeName"] = NODE
        create(cluster.api, [pod])
        free = [i for i in sorted(uuids) if held[i] < replicas]
        expected = min(free, key=lambda i: (held[i], i))
        print(f"e2e: replicas held per GPU {held}: {name} should get GPU {expected}", flush=True)
        _check_grant(checks, cluster, kubelet.allocate(1), name, [expected], 1, uuids, replicas)
        held = _held(kubelet, uuids, replicas)
    # direct-b is where the rule shows: the lowest GPU with a free replica is not
    # the least-shared one (USAGE and the pods above make it so).
    checks.check(expected != free[0], "the least-shared GPU differed from the lowest free one "
                 "for the last pod, so the rule was observable", (expected, free))


def _health(cluster, checks, kubelet, uuids, replicas, script):
    """Scripted in the plugin's NVML stand-in: XIDs (NVML's event API) and a lost GPU
    (found by polling), each streamed on the open ListAndWatch."""
    with open(script, encoding="utf-8") as f:
        base = f.read()
    want = {f"{uuids[i]}::{k}": "Healthy" for i in uuids for k in range(replicas)}

    def mark(gpu, health):
        for k in range(replicas):
            want[f"{uuids[gpu]}::{k}"] = health

    def step(lines, what):
        seen = len(kubelet.of("list"))
        with open(script, "w", encoding="utf-8") as f:
            f.write(base + lines)
        cluster.sup.require_running(PLUGIN)
        got = kubelet.wait_list(dict(want), what, seen)
        checks.check(got, f"ListAndWatch streams: {what}", None if got else want)
        return seen

    # In the script's order: the application's XID (13) on GPU 2 is handled before
    # the critical one (79) on GPU 1, so no list in between may show GPU 2 unhealthy.
    mark(1, "Unhealthy")
    seen = step("gpu 2 xid 13\ngpu 1 xid 79\n", "XID 79 makes GPU 1's devices unhealthy")
    lists = [e["devices"] for e in kubelet.of("list")[seen:]]
    checks.check(all(d.get(f"{uuids[2]}::0") == "Healthy" for d in lists),
                 "an application's XID (13) leaves GPU 2 healthy", lists)
    mark(3, "Unhealthy")
    step("gpu 2 xid 13\ngpu 1 xid 79\ngpu 3 error 15\n",
         "GPU 3 lost (NVML: GPU is lost) makes its devices unhealthy")
    mark(3, "Healthy")
    step("gpu 2 xid 13\ngpu 1 xid 79\n",
         "GPU 3 answering again is healthy again; GPU 1 stays unhealthy after its XID")
