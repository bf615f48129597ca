"""The end-to-end fixture: a real control plane on loopback with Tidal beside it.

Started in order: etcd, kube-apiserver (token auth, AlwaysAllow), the namespaces,
fake nodes (kwok-style: a Node, then its status), one `tidal agent` per node over
the NVML stub, a real Prometheus scraping the agents every second, `tidal serve`
with the deploy's flags and policy, and kube-scheduler with the deploy's
KubeSchedulerConfiguration. Everything the deploy decides comes from
deploy/scheduler/, so a test fails if those files drift from what is tested."""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field

import yaml

from kubeapi import KubeApi, http_get
from pki import Pki
from procs import Supervisor, free_port, wait_until

GIB = 1 << 30
A10_MEMORY = 24 * GIB
SCHEDULER_NAME = "load-aware-scheduler"
TEST_NAMESPACE = "e2e"
SYSTEM_NAMESPACE = "tidal-system"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_ANNOTATION = "tidal.io/gpus"

# A disk whose counters never move: the agents' storage await is 0, so the
# build machine's own disk load cannot reject a fake node.
_QUIET_DISKSTATS = "259 0 nvme0n1 1000 0 8000 500 1000 0 8000 500 0 1000 1000 0 0 0 0 0 0\n"


@dataclass
class Gpu:
    total: int
    used: int

    @property
    def free(self):
        return self.total - self.used


@dataclass
class FakeNode:
    """A node as the API and its agent see it. The node advertises nvidia.com/gpu
    equal to its number of GPUs times slots_per_gpu (the device plugin's replicas;
    one without time-slicing)."""
    name: str
    gpus: list
    labels: dict = field(default_factory=dict)
    model: str = "NVIDIA A10"
    slots_per_gpu: int = 1

    def stub_script(self):
        lines = [f"count {len(self.gpus)}"]
        for i, g in enumerate(self.gpus):
            lines += [f"gpu {i} uuid GPU-{self.name}-{i}", f"gpu {i} name {self.model}",
                      f"gpu {i} bus 00000000:{0x17 + i:02x}:00.0",
                      f"gpu {i} memory {g.total} 0 {g.used}"]
        return "\n".join(lines) + "\n"


def a10_node(name, used_fractions, labels=None):
    """4 × A10 24 GB (PCIe, no NVLink), GPU i using used_fractions[i] of its memory."""
    gpus = [Gpu(A10_MEMORY, int(A10_MEMORY * f)) for f in used_fractions]
    return FakeNode(name, gpus, dict(labels or {}))


@dataclass
class Tools:
    kube_bin_dir: str  # kube-apiserver and kube-scheduler
    tidal: str  # serve
    agent: str  # tidal-agent (or tidal): `agent` is its subcommand either way
    nvml_stub: str
    source_dir: str

    def deploy_file(self, name):
        return os.path.join(self.source_dir, "deploy", "scheduler", name)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def render_scheduler_config(tools, kubeconfig, extender_url):
    """The deploy's KubeSchedulerConfiguration with three changes only: the apiVersion
    kube-scheduler 1.23 speaks, the kubeconfig, and the extender's address."""
    config = load_yaml(tools.deploy_file("scheduler-config.yaml"))
    config["apiVersion"] = "kubescheduler.config.k8s.io/v1beta3"
    config.setdefault("clientConnection", {})["kubeconfig"] = kubeconfig
    (extender,) = config["extenders"]
    extender["urlPrefix"] = extender_url
    return config


def render_serve_args(tools, listen, prometheus_url, kubeconfig, metrics_listen="127.0.0.1:0",
                      policy_file=None):
    """The sidecar's arguments from deploy/scheduler/deployment.yaml, with the
    addresses of this run (the probe-and-metrics listener on a free loopback port:
    the Deployment's is every interface, fixed), the policy file the tidal-policy
    ConfigMap is made from (kustomization: tidal.yaml=policy.yaml) unless a
    scenario changed it (`policy_file`), and --kubeconfig for --in-cluster."""
    deployment = load_yaml(tools.deploy_file("deployment.yaml"))
    containers = deployment["spec"]["template"]["spec"]["containers"]
    (sidecar,) = [c for c in containers if c["name"] == "tidal"]
    replaced = {"--listen": f"--listen={listen}",
                "--metrics-listen": f"--metrics-listen={metrics_listen}",
                "--config": f"--config={policy_file or tools.deploy_file('policy.yaml')}",
                "--prometheus": f"--prometheus={prometheus_url}",
                "--in-cluster": f"--kubeconfig={kubeconfig}"}
    return [replaced.get(a.split("=", 1)[0], a) for a in sidecar["args"]]


def policy(tools):
    return load_yaml(tools.deploy_file("policy.yaml"))


def duration_s(text):
    """A policy duration ("20s", "500ms", "1m") in seconds."""
    text = str(text)
    for unit, scale in (("ms", 0.001), ("s", 1), ("m", 60)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    return float(text)


class Cluster:
    def __init__(self, tools, nodes, workdir):
        self.tools = tools
        self.nodes = {n.name: n for n in nodes}
        self.dir = workdir
        self.sup = Supervisor(self._mkdir("logs"))
        self.pki = Pki(self._mkdir("pki"))
        self.ports = {}
        self.api = None
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.policy = policy(tools)
        self.nudges = 0

    def _mkdir(self, *parts):
        path = os.path.join(self.dir, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def _port(self, name):
        return self.ports.setdefault(name, free_port())

    # Start-up, in dependency order.

    def start(self):
        started = time.monotonic()
        self.pki.generate()
        self.start_etcd()
        self.start_apiserver()
        self.create_namespaces()
        for node in self.nodes.values():
            self.create_node(node)
        for node in self.nodes.values():
            self.start_agent(node)
        self.start_prometheus()
        self.wait_for_series()
        self.start_serve()
        self.start_scheduler()
        print(f"e2e: cluster of {len(self.nodes)} nodes up in {time.monotonic() - started:.1f} s",
              flush=True)

    def stop(self):
        self.sup.stop_all()

    def start_etcd(self):
        client, peer = self._port("etcd"), self._port("etcd-peer")
        self.sup.start("etcd", [
            "etcd", "--name", "e2e", "--data-dir", self._mkdir("etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{peer}", "--log-level", "warn"])
        wait_until("etcd /health", lambda: self._etcd_healthy(client), 30)

    def _etcd_healthy(self, port):
        self.sup.require_running("etcd")
        return http_get(f"http://127.0.0.1:{port}/health", timeout_s=2)[0] == 200

    def start_apiserver(self):
        port = self._port("apiserver")
        p = self.pki
        self.sup.start("kube-apiserver", [
            os.path.join(self.tools.kube_bin_dir, "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={port}", f"--cert-dir={self._mkdir('apiserver-certs')}",
            f"--tls-cert-file={p.serving_cert}", f"--tls-private-key-file={p.serving_key}",
            f"--client-ca-file={p.ca_cert}", f"--token-auth-file={p.token_file}",
            "--authorization-mode=AlwaysAllow",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={p.sa_pub}",
            f"--service-account-signing-key-file={p.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
            # No controller manager and no kubelet: these would wait for them forever.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,"
            "MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
            "--profiling=false"])
        server = f"https://127.0.0.1:{port}"
        self.api = KubeApi(server, p.ca_cert, p.token)
        self.pki.write_kubeconfig(self.kubeconfig, server)
        wait_until("kube-apiserver /readyz", self._apiserver_ready, 90, 0.5)

    def _apiserver_ready(self):
        self.sup.require_running("kube-apiserver")
        return self.api.ready()

    def create_namespaces(self):
        for ns in (SYSTEM_NAMESPACE, TEST_NAMESPACE):
            self.api.create_namespace(ns)

    def create_node(self, node):
        labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux",
                  "nvidia.com/gpu.present": "true", **node.labels}
        self.api.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": node.name, "labels": labels}})
        resources = {GPU_RESOURCE: str(len(node.gpus) * node.slots_per_gpu), "cpu": "32",
                     "memory": "256Gi",
                     "pods": "110"}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "fake node (e2e)", "lastHeartbeatTime": now,
                 "lastTransitionTime": now}
        self.api.merge_patch(f"/api/v1/nodes/{node.name}/status", {"status": {
            "capacity": resources, "allocatable": resources, "conditions": [ready]}})

    def start_agent(self, node):
        home = self._mkdir("agents", node.name)
        script = os.path.join(home, "nvml.script")
        with open(script, "w", encoding="utf-8") as f:
            f.write(node.stub_script())
        procfs = self._mkdir("agents", node.name, "proc")
        with open(os.path.join(procfs, "diskstats"), "w", encoding="utf-8") as f:
            f.write(_QUIET_DISKSTATS)
        port = self._port(f"agent-{node.name}")
        env = dict(os.environ, TIDAL_NVML_STUB_SCRIPT=script)
        # As the DaemonSet runs it: no pod source, so tidal serve counts the NVLink
        # pods from its own watch.
        self.sup.start(f"agent-{node.name}", [
            self.tools.agent, "agent", "--listen", f"127.0.0.1:{port}", "--node-name", node.name,
            "--nvml-lib", self.tools.nvml_stub, "--interval", "1s", "--procfs", procfs], env=env)

    # Prometheus.

    @property
    def prometheus_url(self):
        return f"http://127.0.0.1:{self._port('prometheus')}"

    def scrape_targets(self):
        return [f"127.0.0.1:{self.ports[f'agent-{n}']}" for n in self.nodes]

    def start_prometheus(self, scrape_interval="1s"):
        targets = self.scrape_targets()
        config = {"global": {"scrape_interval": scrape_interval,
                             "scrape_timeout": scrape_interval,
                             "evaluation_interval": scrape_interval},
                  "scrape_configs": [{"job_name": "ai-node-metrics",
                                      "static_configs": [{"targets": targets}]}]}
        path = os.path.join(self.dir, "prometheus.yml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(config, f)
        self.sup.start("prometheus", [
            "prometheus", f"--config.file={path}",
            f"--storage.tsdb.path={self._mkdir('prometheus-data')}",
            f"--web.listen-address=127.0.0.1:{self._port('prometheus')}"])
        wait_until("Prometheus /-/ready", self._prometheus_ready, 60, 0.5)

    def _prometheus_ready(self):
        self.sup.require_running("prometheus")
        return http_get(self.prometheus_url + "/-/ready", timeout_s=2)[0] == 200

    def stop_prometheus(self, sig=signal.SIGKILL):
        self.sup.stop("prometheus", sig=sig)

    def prometheus_query(self, query):
        url = self.prometheus_url + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
        status, body = http_get(url)
        if status != 200:
            raise RuntimeError(f"Prometheus query {query}: HTTP {status}: {body[:200]}")
        return json.loads(body)["data"]["result"]

    def wait_for_series(self):
        """Until Prometheus has every agent's collector and every GPU: serve's first
        fetch then sees the whole cluster."""
        gpus = sum(len(n.gpus) for n in self.nodes.values())

        def complete():
            up = self.prometheus_query("count by (node) (ai_collector_up)")
            total = self.prometheus_query("count(ai_gpu_memory_total_bytes)")
            return len(up) == len(self.nodes) and total and int(total[0]["value"][1]) == gpus
        wait_until(f"Prometheus series of {len(self.nodes)} nodes, {gpus} GPUs", complete, 60, 0.5)

    # tidal serve.

    @property
    def serve_url(self):
        return f"http://127.0.0.1:{self._port('serve')}"

    def start_serve(self):
        listen = f"127.0.0.1:{self._port('serve')}"
        policy_file = None
        if self.policy != policy(self.tools):  # a scenario's own (its policy() hook)
            policy_file = os.path.join(self.dir, "policy.yaml")
            with open(policy_file, "w", encoding="utf-8") as f:
                yaml.safe_dump(self.policy, f)
        args = render_serve_args(self.tools, listen, self.prometheus_url, self.kubeconfig,
                                 policy_file=policy_file)
        if os.environ.get("TIDAL_E2E_SERVE_LOG_LEVEL"):  # debug: one line per decision
            args.append(f"--log-level={os.environ['TIDAL_E2E_SERVE_LOG_LEVEL']}")
        self.sup.start("serve", [self.tools.tidal, *args])
        wait_until("tidal serve /readyz", self._serve_ready, 60, 0.25)

    def _serve_ready(self):
        self.sup.require_running("serve")
        return http_get(self.serve_url + "/readyz", timeout_s=2)[0] == 200

    def kill_serve(self, sig=signal.SIGKILL):
        self.sup.stop("serve", sig=sig)

    def serve_metrics(self):
        status, body = http_get(self.serve_url + "/metrics")
        if status != 200:
            raise RuntimeError(f"tidal serve /metrics: HTTP {status}")
        return parse_exposition(body)

    # kube-scheduler.

    def start_scheduler(self, config=None):
        """kube-scheduler with `config` (default: the deploy's, rendered)."""
        config = config or render_scheduler_config(self.tools, self.kubeconfig, self.serve_url)
        path = os.path.join(self.dir, "scheduler-config.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(config, f)
        port = self._port("scheduler")
        self.sup.start("kube-scheduler", [
            os.path.join(self.tools.kube_bin_dir, "kube-scheduler"), f"--config={path}",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={self.pki.serving_cert}",
            f"--tls-private-key-file={self.pki.serving_key}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}", "--v=2"])
        lease = config["leaderElection"]
        wait_until("kube-scheduler's leader lease", lambda: self._leader(lease), 60, 0.5)

    def _leader(self, lease):
        self.sup.require_running("kube-scheduler")
        ns, name = lease["resourceNamespace"], lease["resourceName"]
        obj = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
        return obj.get("spec", {}).get("holderIdentity")

    def scheduler_metrics(self):
        status, body = http_get(f"https://127.0.0.1:{self.ports['scheduler']}/metrics",
                                context=self.api.context, token=self.pki.token)
        if status != 200:
            raise RuntimeError(f"kube-scheduler /metrics: HTTP {status}: {body[:200]}")
        return parse_exposition(body)

    def nudge_nodes(self):
        """A label change on every node: kube-scheduler moves the pods whose attempt
        failed with an error back to its active queue at once, instead of at its
        60 s flush of unschedulable pods (an assigned pod does not move them)."""
        self.nudges += 1
        for name in self.nodes:
            self.api.label_node(name, {"e2e.tidal.io/nudge": str(self.nudges)})

    def log_of(self, name):
        with open(self.sup.log_path(name), encoding="utf-8", errors="replace") as f:
            return f.read()


def parse_exposition(text):
    """{'name{labels}': value} of a Prometheus text exposition."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            samples[key] = float(value)
        except ValueError:
            continue
    return samples


def metric_sum(samples, name, **labels):
    """Sum of the samples of a family whose labels include the given ones."""
    total = 0.0
    for key, value in samples.items():
        family, _, rest = key.partition("{")
        if family != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            total += value
    return total


def find_kube_binaries(source_dir, cache_dir, dist_dir=None):
    """(directory with kube-apiserver and kube-scheduler, None) or (None, what is missing).
    KUBE_BIN_DIR first; else the shared distribution next to the repository,
    unpacked (and its checksums checked) into the build tree's cache."""
    wanted = ("kube-apiserver", "kube-scheduler")
    missing = []
    env_dir = os.environ.get("KUBE_BIN_DIR")
    if env_dir:
        absent = [b for b in wanted if not os.access(os.path.join(env_dir, b), os.X_OK)]
        if not absent:
            return os.path.abspath(env_dir), None
        missing.append(f"KUBE_BIN_DIR={env_dir} has no executable {' or '.join(absent)}")
    else:
        missing.append("KUBE_BIN_DIR is not set")
    dist = dist_dir or os.path.abspath(os.path.join(source_dir, os.pardir, "shared", "k8s"))
    installer = os.path.join(dist, "install.sh")
    if not os.path.isfile(installer):
        missing.append(f"no Kubernetes distribution at {dist} (install.sh not found)")
        return None, "; ".join(missing)
    result = subprocess.run(["bash", installer, cache_dir], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{installer} {cache_dir} failed:\n{result.stdout}{result.stderr}")
    return cache_dir, None


def missing_tools():
    return [t for t in ("etcd", "prometheus", "openssl") if shutil.which(t) is None]
