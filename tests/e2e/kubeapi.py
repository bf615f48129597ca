"""A small Kubernetes API client over urllib: the CA the harness made, a bearer token."""
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request


class ApiError(RuntimeError):
    def __init__(self, method, path, status, body):
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


def http_get(url, timeout_s=5, context=None, token=None):
    """GET of a plain endpoint (Prometheus, tidal serve, the scheduler's /metrics):
    (status, body text); a refused connection raises."""
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s, context=context) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


class KubeApi:
    def __init__(self, server, ca_file, token):
        self.server = server.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=ca_file)

    def request(self, method, path, body=None, content_type="application/json", timeout_s=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s, context=self.context) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            raise ApiError(method, path, e.code, e.read().decode("utf-8", "replace")) from None
        return json.loads(text) if text else {}

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def merge_patch(self, path, body):
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path):
        return self.request("DELETE", path)

    def ready(self):
        req = urllib.request.Request(self.server + "/readyz")
        req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=2, context=self.context) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    # Objects the scenarios use.

    def create_namespace(self, name):
        return self.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": name}})

    def create_pod(self, namespace, pod):
        return self.post(f"/api/v1/namespaces/{namespace}/pods", pod)

    def pod(self, namespace, name):
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def pods(self, namespace):
        return self.get(f"/api/v1/namespaces/{namespace}/pods")["items"]

    def label_node(self, name, labels):
        """Merge-patches labels (a value of None removes the label)."""
        return self.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": labels}})

    def events(self, namespace, involved_name=None):
        query = ""
        if involved_name:
            query = "?" + urllib.parse.urlencode(
                {"fieldSelector": f"involvedObject.name={involved_name}"})
        return self.get(f"/api/v1/namespaces/{namespace}/events{query}")["items"]
