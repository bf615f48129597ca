#!/usr/bin/python3
"""Checks rendered Kubernetes manifests against the schemas in schemas/.

  validate_manifests.py RENDERED.yaml [DASHBOARD_OUT_DIR]

Every object needs a schema for its kind (schemas/<Kind>.json, whose apiVersion
must match), and must satisfy it. On top of the schemas, checks that need the
whole stack: names are unique per kind and namespace, every namespace used is
created by the stack, workload selectors match their pod template's labels,
bindings name roles and service accounts that exist, Services select some pod
template. Prints one line per problem naming the object and the field, exits 1
if there was any. Runs with Debian's python3-yaml and python3-jsonschema.
"""
import json
import pathlib
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


def check(docs, schemas):
    problems = []
    seen = set()
    namespaces = BUILTIN_NAMESPACES | {
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
        if kind not in CLUSTER_SCOPED and ns and ns not in namespaces:
            problems.append(f"{where(doc, i)}: .metadata.namespace: namespace {ns!r} is not created by the stack")
        by_kind.setdefault(kind, []).append((i, doc))

    templates = []  # (namespace, labels, service account) of every pod template
    for kind in ("DaemonSet", "Deployment"):
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
        if selector and not any(t_ns == ns and selects(selector, labels) for t_ns, labels, _ in templates):
            problems.append(f"{where(doc, i)}: .spec.selector: selects no pod template of the stack")

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
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    source = pathlib.Path(sys.argv[1])
    try:
        docs = [d for d in yaml.safe_load_all(source.read_text()) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        print(f"{source}: cannot read manifests: {e}", file=sys.stderr)
        return 2
    if not docs:
        print(f"{source}: no objects", file=sys.stderr)
        return 1
    problems = check(docs, load_schemas())
    for p in problems:
        print(f"{source}: {p}")
    if len(sys.argv) == 3:
        # ConfigMap payloads, for the caller's own checks (dashboard JSON, promtool).
        out = pathlib.Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        for d in docs:
            if d.get("kind") == "ConfigMap":
                for key, value in (d.get("data") or {}).items():
                    (out / f"{d['metadata']['name']}.{key}").write_text(value)
    print(f"{source}: {len(docs)} objects, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
