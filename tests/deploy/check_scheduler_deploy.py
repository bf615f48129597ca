#!/usr/bin/env python3
"""Renders deploy/scheduler offline with `kubectl kustomize` and checks that the
pieces fit: the objects and their namespaces, the generated ConfigMaps the
Deployment mounts, the extender entry against the sidecar's flags and verbs,
the example Jobs' schedulerName, and the policy ConfigMap through
`tidal check-config`. Usage: check_scheduler_deploy.py SOURCE_DIR TIDAL_BINARY"""
import subprocess
import sys
import tempfile
from urllib.parse import urlparse

import yaml

src, tidal = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


rendered = subprocess.run(["kubectl", "kustomize", f"{src}/deploy/scheduler"], check=True,
                          capture_output=True, text=True).stdout
docs = [d for d in yaml.safe_load_all(rendered) if d]
by_kind = {}
for d in docs:
    check("apiVersion" in d and "kind" in d and d.get("metadata", {}).get("name"),
          f"object without apiVersion/kind/name: {d}")
    by_kind.setdefault(d["kind"], []).append(d)

want = {"ServiceAccount": 1, "Role": 1, "RoleBinding": 2, "ClusterRole": 1, "ClusterRoleBinding": 3,
        "ConfigMap": 2, "Service": 1, "Deployment": 1}
check({k: len(v) for k, v in by_kind.items()} == want, f"kinds {sorted(by_kind)} != {want}")
for d in docs:
    ns = d["metadata"].get("namespace")
    if d["kind"] in ("ClusterRole", "ClusterRoleBinding"):
        check(ns is None, f"{d['metadata']['name']}: cluster-scoped object with a namespace")
    elif d["metadata"]["name"].endswith("extension-apiserver-authentication-reader"):
        check(ns == "kube-system", "the authentication-reader RoleBinding must be in kube-system")
    else:
        check(ns == "tidal-system", f"{d['kind']} {d['metadata']['name']}: namespace {ns}")

deploy = by_kind["Deployment"][0]
pod = deploy["spec"]["template"]["spec"]
configmaps = {c["metadata"]["name"]: c for c in by_kind["ConfigMap"]}
for v in pod["volumes"]:
    check(v["configMap"]["name"] in configmaps, f"volume {v['name']} mounts a ConfigMap that is not rendered")
sched_cm = next(c for c in configmaps.values() if "scheduler-config.yaml" in c["data"])
policy_cm = next(c for c in configmaps.values() if "tidal.yaml" in c["data"])

config = yaml.safe_load(sched_cm["data"]["scheduler-config.yaml"])
check(config["apiVersion"] == "kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration apiVersion")
check(config["kind"] == "KubeSchedulerConfiguration", "KubeSchedulerConfiguration kind")
profiles = [p["schedulerName"] for p in config["profiles"]]
check(profiles == ["load-aware-scheduler"], f"profiles {profiles}")
check(config["leaderElection"]["resourceName"] == "load-aware-scheduler", "own leader-election lease")
(ext,) = config["extenders"]
containers = {c["name"]: c for c in pod["containers"]}
tidal_args = containers["tidal"]["args"]
check(tidal_args[0] == "serve", "the sidecar runs tidal serve")
listen = next(a.split("=", 1)[1] for a in tidal_args if a.startswith("--listen="))
url = urlparse(ext["urlPrefix"])
check(f"{url.hostname}:{url.port}" == listen, f"urlPrefix {ext['urlPrefix']} vs --listen {listen}")
check(url.hostname in ("127.0.0.1", "localhost"), "the extender is reached on localhost")
check(ext["filterVerb"] == "filter" and ext["prioritizeVerb"] == "prioritize", "verbs served by tidal serve")
check(int(ext["weight"]) > 0, "weight must be > 0 with a prioritizeVerb")
check(ext.get("bindVerb") == "bind", "bindVerb served by tidal serve")
check("--in-cluster" in tidal_args, "/bind and the Node watch need --in-cluster")
check(ext["nodeCacheCapable"] is True, "names only: tidal serve watches Nodes itself")

# The extender's own role is exactly what it calls.
(role,) = by_kind["ClusterRole"]
rules = {(tuple(r["apiGroups"]), r["resources"][0]): sorted(r["verbs"]) for r in role["rules"]}
check(rules == {(("",), "nodes"): ["list", "watch"],
                (("",), "pods"): ["get", "list", "watch"],
                (("",), "pods/binding"): ["create"]}, f"tidal-extender rules {rules}")
bound = [b for b in by_kind["ClusterRoleBinding"] if b["roleRef"]["name"] == role["metadata"]["name"]]
check(len(bound) == 1 and bound[0]["subjects"][0]["name"] == pod["serviceAccountName"],
      "tidal-extender is bound to the scheduler pod's service account")
check([r["name"] for r in ext["managedResources"]] == ["nvidia.com/gpu"], "managedResources")
check(ext["ignorable"] is False, "filter failures must not be skipped")
timeout = ext["httpTimeout"]
check(timeout.endswith("s") and 0 < float(timeout[:-1]) <= 5, f"httpTimeout {timeout}")
config_arg = next(a.split("=", 1)[1] for a in tidal_args if a.startswith("--config="))
mounts = {m["name"]: m["mountPath"] for m in containers["tidal"]["volumeMounts"]}
check(config_arg == mounts["policy"] + "/tidal.yaml", f"--config {config_arg} is not the mounted policy")

for job in ("task-heavy.yaml", "task-nvlink.yaml"):
    with open(f"{src}/examples/k8s/{job}") as f:
        j = yaml.safe_load(f)
    check(j["spec"]["template"]["spec"]["schedulerName"] == "load-aware-scheduler", f"{job}: schedulerName")

with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
    f.write(policy_cm["data"]["tidal.yaml"])
    f.flush()
    r = subprocess.run([tidal, "check-config", f.name], capture_output=True, text=True)
    check(r.returncode == 0, f"tidal check-config on the policy ConfigMap: {r.stderr}")

for f in failures:
    print("FAIL:", f)
print(f"{len(docs)} objects rendered, {len(failures)} problems")
sys.exit(1 if failures else 0)
