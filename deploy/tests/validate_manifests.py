#!/usr/bin/python3
"""Checks rendered Kubernetes manifests against the schemas in schemas/.

  validate_manifests.py [--fragment] [--namespace-exists NS]... RENDERED.yaml [CONFIGMAP_OUT_DIR]

Every object needs a schema for its kind (schemas/<Kind>.json, whose apiVersion
must match), and must satisfy it. On top of the schemas, checks that need the
whole stack: names are unique per kind and namespace, every namespace used is
created by the stack (or given with --namespace-exists), workload selectors
match their pod template's labels, bindings name roles and service accounts
that exist, Services select some pod template. And checks of what a cluster
would do with the pods: every container has resource requests (cpu, memory) and
a memory limit; a probe has no loopback host unless the pod is hostNetwork (the
kubelet probes from the node); a probe's port, a Service's targetPort and a
ServiceMonitor's or PodMonitor's port lead to a port a container declares (or,
for a number, that its args listen on), and not to one its args bind to
loopback. --fragment: a part of the stack (deploy/agent, ...), whose references
to objects elsewhere in the stack are not checked. Prints one line per problem
naming the object and the field, exits 1 if there was any. Runs with Debian's
python3-yaml and python3-jsonschema.
"""
import argparse
import json
import pathlib
import re
import sys

import jsonschema
import yaml

HERE = pathlib.Path(__file__).resolve().parent
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
# What every Kubernetes cluster provides, so the stack may refer to it without
# creating it: kube-system, the system:* ClusterRoles (kube-scheduler's among
# them) and the Role that reads the API server's client-CA ConfigMap.
BUILTIN_NAMESPACES = {"kube-system", "default"}
BUILTIN_ROLES = {("Role", "kube-system", "extension-apiserver-authentication-reader")}


def builtin_role(kind, namespace, name):
    return (kind == "ClusterRole" and str(name).startswith("system:")) or (kind, namespace, name) in BUILTIN_ROLES


def load_schemas():
    definitions = json.loads((HERE / "schemas/definitions.json").read_text())
    schemas = {}
    for path in sorted((HERE / "schemas").glob("*.json")):
        if path.name == "definitions.json":
            continue
        schema = json.loads(path.read_text())
        # Shared definitions are copied in so that only local refs are needed
        # (no resolver API, which changed between jsonschema releases).
        schema["definitions"] = definitions
        jsonschema.Draft7Validator.check_schema(schema)
        schemas[path.stem] = jsonschema.Draft7Validator(schema)
    return schemas


def where(doc, index):
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name", "?")
    return f"object {index} {doc.get('kind', '?')} {ns + '/' if ns else ''}{name}"


def field_path(error):
    parts = [str(p) for p in error.absolute_path]
    return "." + ".".join(parts) if parts else "(top level)"


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())

WORKLOADS = ("DaemonSet", "Deployment", "StatefulSet")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$")
# An address a program is told to listen on: --listen=127.0.0.1:8890,
# --metrics-listen=:8891, --web.listen-address=..., --bind-address=..., or a bare
# port: --secure-port=10259, --port=9090.
LISTEN_FLAG = re.compile(r"^--[a-z0-9.-]*(listen|bind)[a-z0-9.-]*$")
PORT_FLAG = re.compile(r"^--([a-z0-9.-]+-)?port$")


def listens(container):
    """(host, port) of every address the container's command line listens on;
    host "" when every interface."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    out = []
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        if LISTEN_FLAG.match(flag):
            host, _, port = value.rpartition(":")
            if port.isdigit():
                out.append((host.strip("[]"), int(port)))
        elif PORT_FLAG.match(flag) and value.isdigit():
            out.append(("", int(value)))
    return out


class PodPorts:
    """The ports of one pod template's containers, to resolve a probe's, a
    Service's or a monitor's port against."""

    def __init__(self, spec):
        self.host_network = bool(spec.get("hostNetwork"))
        self.by_name = {}  # port name -> (container, number)
        self.numbers = {}  # number -> container
        self.listens = {}  # number -> [(container, host)]
        for c in spec.get("containers") or []:
            for p in c.get("ports") or []:
                if p.get("name"):
                    self.by_name[p["name"]] = (c.get("name"), p.get("containerPort"))
                self.numbers[p.get("containerPort")] = c.get("name")
            for host, port in listens(c):
                self.listens.setdefault(port, []).append((c.get("name"), host))

    def resolve(self, port, container=None):
        """(number, "") for a port that leads somewhere, else (None, why)."""
        if isinstance(port, str) and not port.isdigit():
            if port not in self.by_name:
                return None, f"port {port!r} is no container port's name"
            owner, number = self.by_name[port]
            if container and owner != container:
                return None, f"port {port!r} is a port of container {owner!r}, not of {container!r}"
            return number, ""
        number = int(port)
        if number not in self.numbers and number not in self.listens:
            return None, f"port {number} is declared by no container port and listened on by no container's args"
        return number, ""

    def loopback_only(self, number):
        """Why `number` cannot be reached from outside the pod, or ""."""
        if self.host_network:
            return ""
        hosts = self.listens.get(number) or []
        if hosts and all(LOOPBACK.match(h) for _, h in hosts):
            c, h = hosts[0]
            return f"container {c!r} listens on port {number} on {h} only (loopback: nothing outside the pod reaches it)"
        return ""


def pod_templates(by_kind):
    """(where, namespace, labels, spec) of every pod template."""
    for kind in WORKLOADS:
        for i, doc in by_kind.get(kind, []):
            template = (doc.get("spec") or {}).get("template") or {}
            yield (where(doc, i), (doc.get("metadata") or {}).get("namespace"),
                   (template.get("metadata") or {}).get("labels") or {}, template.get("spec") or {})


def check_pods(by_kind, fragment):
    problems = []
    pods = []  # (namespace, labels, PodPorts)
    for at, ns, labels, spec in pod_templates(by_kind):
        ports = PodPorts(spec)
        pods.append((ns, labels, ports))
        for group in ("initContainers", "containers"):
            for c in spec.get(group) or []:
                field = f".spec.template.spec.{group}[{c.get('name')}]"
                res = c.get("resources") or {}
                missing = [f"requests.{r}" for r in ("cpu", "memory") if r not in (res.get("requests") or {})]
                missing += [f"limits.{r}" for r in ("memory",) if r not in (res.get("limits") or {})]
                if missing:
                    problems.append(f"{at}: {field}.resources: no {', '.join(missing)} "
                                    "(expected requests of cpu and memory and a memory limit)")
                for probe_kind in PROBES:
                    probe = c.get(probe_kind)
                    if not probe:
                        continue
                    handler = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc") or {}
                    pfield = f"{field}.{probe_kind}"
                    host = str(handler.get("host") or "")
                    if host and LOOPBACK.match(host) and not ports.host_network:
                        problems.append(f"{at}: {pfield}.host: {host} is loopback, and the kubelet probes "
                                        "from the node (expected no host: the pod's address)")
                    if "port" not in handler:
                        continue
                    number, why = ports.resolve(handler["port"], c.get("name"))
                    if number is None:
                        problems.append(f"{at}: {pfield}.port: {why}")
                    elif why := ports.loopback_only(number):
                        problems.append(f"{at}: {pfield}.port: {why}")

    def selected(ns, selector):
        return [p for p_ns, labels, p in pods if p_ns == ns and selector and selects(selector, labels)]

    services = []  # (namespace, labels, {port name: [target numbers]})
    for i, doc in by_kind.get("Service", []):
        ns = doc["metadata"].get("namespace")
        targets = selected(ns, (doc.get("spec") or {}).get("selector"))
        names = {}
        for port in (doc.get("spec") or {}).get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            field = f".spec.ports[{port.get('name') or port.get('port')}].targetPort"
            numbers = []
            for p in targets:
                number, why = p.resolve(target)
                if number is None:
                    problems.append(f"{where(doc, i)}: {field}: {why}")
                elif why := p.loopback_only(number):
                    problems.append(f"{where(doc, i)}: {field}: {why}")
                else:
                    numbers.append(number)
            names[port.get("name")] = numbers
        services.append((ns, (doc["metadata"].get("labels") or {}), names))
    if fragment and not services:
        return problems  # the monitors' Services are elsewhere in the stack

    def monitor_namespaces(doc):
        sel = (doc.get("spec") or {}).get("namespaceSelector") or {}
        return sel.get("matchNames") or [doc["metadata"].get("namespace")]

    for i, doc in by_kind.get("ServiceMonitor", []):
        selector = ((doc.get("spec") or {}).get("selector") or {}).get("matchLabels")
        chosen = [names for ns, labels, names in services
                  if ns in monitor_namespaces(doc) and selects(selector, labels)]
        if not chosen:
            problems.append(f"{where(doc, i)}: .spec.selector: selects no Service of the stack")
            continue
        for e in (doc.get("spec") or {}).get("endpoints") or []:
            if "port" in e and not any(e["port"] in names for names in chosen):
                problems.append(f"{where(doc, i)}: .spec.endpoints[{e['port']}].port: "
                                f"{e['port']!r} is no port name of the Services it selects")
    for i, doc in by_kind.get("PodMonitor", []):
        selector = ((doc.get("spec") or {}).get("selector") or {}).get("matchLabels")
        chosen = [p for ns in monitor_namespaces(doc) for p in selected(ns, selector)]
        if not chosen:
            problems.append(f"{where(doc, i)}: .spec.selector: selects no pod template of the stack")
            continue
        for e in (doc.get("spec") or {}).get("podMetricsEndpoints") or []:
            if "port" not in e:
                continue
            for p in chosen:
                number, why = p.resolve(e["port"])
                if number is None or (why := p.loopback_only(number)):
                    problems.append(f"{where(doc, i)}: .spec.podMetricsEndpoints[{e['port']}].port: {why}")
    return problems


def check(docs, schemas, fragment=False, external_namespaces=()):
    problems = []
    seen = set()
    namespaces = BUILTIN_NAMESPACES | set(external_namespaces) | {
        d["metadata"]["name"] for d in docs if d.get("kind") == "Namespace" and d.get("metadata")}
    by_kind = {}
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            problems.append(f"object {i}: not a mapping")
            continue
        kind = doc.get("kind")
        validator = schemas.get(kind)
        if validator is None:
            problems.append(f"{where(doc, i)}: no schema for kind {kind!r} (apiVersion {doc.get('apiVersion')!r})")
            continue
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            problems.append(f"{where(doc, i)}: {field_path(error)}: {error.message}")
        meta = doc.get("metadata") or {}
        key = (kind, meta.get("namespace"), meta.get("name"))
        if key in seen:
            problems.append(f"{where(doc, i)}: duplicate {kind} name")
        seen.add(key)
        ns = meta.get("namespace")
        if not fragment and kind not in CLUSTER_SCOPED and ns and ns not in namespaces:
            problems.append(f"{where(doc, i)}: .metadata.namespace: namespace {ns!r} is not created by the stack")
        by_kind.setdefault(kind, []).append((i, doc))

    templates = []  # (namespace, labels, service account) of every pod template
    for kind in WORKLOADS:
        for i, doc in by_kind.get(kind, []):
            spec = doc.get("spec") or {}
            selector = (spec.get("selector") or {}).get("matchLabels") or {}
            template = spec.get("template") or {}
            labels = (template.get("metadata") or {}).get("labels") or {}
            if not selects(selector, labels):
                problems.append(f"{where(doc, i)}: .spec.selector.matchLabels: does not match .spec.template.metadata.labels")
            templates.append((doc["metadata"].get("namespace"), labels, (template.get("spec") or {}).get("serviceAccountName")))
    for i, doc in by_kind.get("Service", []):
        selector = (doc.get("spec") or {}).get("selector")
        ns = doc["metadata"].get("namespace")
        if not fragment and selector and not any(
                t_ns == ns and selects(selector, labels) for t_ns, labels, _ in templates):
            problems.append(f"{where(doc, i)}: .spec.selector: selects no pod template of the stack")
    problems += check_pods(by_kind, fragment)
    if fragment:
        return problems

    accounts = {(d["metadata"].get("namespace"), d["metadata"].get("name")) for _, d in by_kind.get("ServiceAccount", [])}
    for ns, _, sa in templates:
        if sa and (ns, sa) not in accounts:
            problems.append(f"pod template in {ns}: .spec.serviceAccountName: {sa!r} is not created by the stack")
    roles = {("ClusterRole", None, d["metadata"]["name"]) for _, d in by_kind.get("ClusterRole", [])}
    roles |= {("Role", d["metadata"].get("namespace"), d["metadata"]["name"]) for _, d in by_kind.get("Role", [])}
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for i, doc in by_kind.get(kind, []):
            ref = doc.get("roleRef") or {}
            ref_ns = doc["metadata"].get("namespace") if ref.get("kind") == "Role" else None
            if (ref.get("kind"), ref_ns, ref.get("name")) not in roles and not builtin_role(
                    ref.get("kind"), ref_ns, ref.get("name")):
                problems.append(f"{where(doc, i)}: .roleRef: {ref.get('kind')} {ref.get('name')!r} is not created by the stack")
            for s in doc.get("subjects") or []:
                if s.get("kind") == "ServiceAccount" and (s.get("namespace"), s.get("name")) not in accounts:
                    problems.append(f"{where(doc, i)}: .subjects: ServiceAccount {s.get('namespace')}/{s.get('name')} is not created by the stack")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--fragment", action="store_true",
                        help="a part of the stack: references to other objects are not checked")
    parser.add_argument("--namespace-exists", action="append", default=[], metavar="NS",
                        help="a namespace the stack uses but does not create (e.g. monitoring)")
    parser.add_argument("rendered")
    parser.add_argument("configmap_out_dir", nargs="?")
    args = parser.parse_args()
    source = pathlib.Path(args.rendered)
    try:
        docs = [d for d in yaml.safe_load_all(source.read_text()) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        print(f"{source}: cannot read manifests: {e}", file=sys.stderr)
        return 2
    if not docs:
        print(f"{source}: no objects", file=sys.stderr)
        return 1
    problems = check(docs, load_schemas(), args.fragment, args.namespace_exists)
    for p in problems:
        print(f"{source}: {p}")
    if args.configmap_out_dir:
        # ConfigMap payloads, for the caller's own checks (dashboard JSON, promtool).
        out = pathlib.Path(args.configmap_out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for d in docs:
            if d.get("kind") == "ConfigMap":
                for key, value in (d.get("data") or {}).items():
                    (out / f"{d['metadata']['name']}.{key}").write_text(value)
    print(f"{source}: {len(docs)} objects, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
