"""Certificates and the token of a throwaway control plane, made with the openssl CLI."""
import os
import secrets
import subprocess


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class Pki:
    """A CA, the apiserver's serving certificate (127.0.0.1 and localhost), the
    service-account signing key pair and a static admin token."""

    def __init__(self, directory):
        self.dir = directory
        self.ca_cert = os.path.join(directory, "ca.crt")
        self.ca_key = os.path.join(directory, "ca.key")
        self.serving_cert = os.path.join(directory, "apiserver.crt")
        self.serving_key = os.path.join(directory, "apiserver.key")
        self.sa_key = os.path.join(directory, "sa.key")
        self.sa_pub = os.path.join(directory, "sa.pub")
        self.token_file = os.path.join(directory, "tokens.csv")
        self.token = secrets.token_hex(16)

    def generate(self):
        os.makedirs(self.dir, exist_ok=True)
        d = self.dir
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-subj", "/CN=tidal-e2e-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
                 "-keyout", "apiserver.key", "-out", "apiserver.csr", cwd=d)
        with open(os.path.join(d, "san.ext"), "w", encoding="utf-8") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                    "extendedKeyUsage=serverAuth\n")
        _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "apiserver.crt",
                 cwd=d)
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
        with open(self.token_file, "w", encoding="utf-8") as f:
            f.write(f"{self.token},admin,admin,system:masters\n")
        return self

    def write_kubeconfig(self, path, server):
        """A kubeconfig with the CA and the token, for tidal serve and kube-scheduler."""
        text = f"""apiVersion: v1
kind: Config
clusters:
  - name: e2e
    cluster: {{server: "{server}", certificate-authority: "{self.ca_cert}"}}
users:
  - name: admin
    user: {{token: "{self.token}"}}
contexts:
  - name: e2e
    context: {{cluster: e2e, user: admin}}
current-context: e2e
"""
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path
