"""What a secure embedded cluster serves with: its certificates, TLS context, trust ConfigMap, policy.

:class:`SecureServing` holds the cluster CA and the front-proxy CA (:mod:`ksched.sim._pki`), a
serving certificate for loopback and the bind address, and builds

- the server's TLS context: TLS 1.2 or later only, client certificates requested (not required)
  and verified against both CAs, as kube-apiserver with ``--client-ca-file`` and
  ``--requestheader-client-ca-file`` does;
- the ``kube-system/extension-apiserver-authentication`` ConfigMap kube-apiserver publishes for
  delegating servers (keys and JSON-array encoding of upstream's cluster authentication trust
  controller);
- client credentials: certificates for any user and groups, and kubeconfig documents embedding them.

With ``cert_dir`` the CA, front-proxy CA, serving and front-proxy client pairs are also written
there under kubeadm's file names (``ca``, ``front-proxy-ca``, ``apiserver``, ``front-proxy-client``,
each ``.crt`` and ``.key``), so another process can act as the front proxy or sign its own clients.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from pathlib import Path
from typing import Any

from ksched.sim._access import CLUSTER_CA_NAME, FRONT_PROXY_CA_NAME
from ksched.sim._authn import RequestHeaderConfig
from ksched.sim._pki import Authority, KeyPair

CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUPS = ("system:masters",)
FRONT_PROXY_CLIENT = "front-proxy-client"
SERVING_NAMES = (
    "127.0.0.1",
    "::1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
"""The serving certificate's names (kubeadm's, without the service IP), plus the bind address."""


class SecureServing:
    """Certificates and the TLS context of one secure cluster (see the module docstring)."""

    def __init__(self, host: str, *, cert_dir: Path | None = None) -> None:
        self.ca = Authority(CLUSTER_CA_NAME)
        self.front_proxy_ca = Authority(FRONT_PROXY_CA_NAME)
        names = SERVING_NAMES
        if host not in ("", "0.0.0.0", "::"):
            names = (*names, host)
        self.serving = self.ca.issue("kube-apiserver", server_names=names)
        self.cert_dir = cert_dir
        if cert_dir is not None:
            self.ca.pair.write(cert_dir, "ca")
            self.front_proxy_ca.pair.write(cert_dir, "front-proxy-ca")
            self.serving.write(cert_dir, "apiserver")
            self.issue_front_proxy_cert().write(cert_dir, "front-proxy-client")

    def ssl_context(self) -> ssl.SSLContext:
        """The server side: TLS 1.2+, our serving pair, client certificates from either CA."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.cert_dir is not None:
            ctx.load_cert_chain(self.cert_dir / "apiserver.crt", self.cert_dir / "apiserver.key")
        else:
            with tempfile.TemporaryDirectory(prefix="ksched-sim-tls-") as tmp:
                crt, key = self.serving.write(Path(tmp), "apiserver")
                ctx.load_cert_chain(crt, key)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(cadata=(self.ca.cert_pem + self.front_proxy_ca.cert_pem).decode())
        return ctx

    def issue_client_cert(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate the cluster authenticates as ``user`` in ``groups``."""
        return self.ca.issue(user, tuple(groups))

    def issue_front_proxy_cert(self, common_name: str = FRONT_PROXY_CLIENT) -> KeyPair:
        """A front-proxy client certificate (CommonName ``front-proxy-client`` is the allowed one)."""
        return self.front_proxy_ca.issue(common_name)

    def trust_configmap(self, rh: RequestHeaderConfig) -> dict[str, Any]:
        """``kube-system/extension-apiserver-authentication`` as kube-apiserver writes it."""
        data = {
            "client-ca-file": self.ca.cert_pem.decode(),
            "requestheader-username-headers": json.dumps(list(rh.username_headers)),
            "requestheader-uid-headers": json.dumps(list(rh.uid_headers)),
            "requestheader-group-headers": json.dumps(list(rh.group_headers)),
            "requestheader-extra-headers-prefix": json.dumps(list(rh.extra_headers_prefix)),
            "requestheader-client-ca-file": self.front_proxy_ca.cert_pem.decode(),
            "requestheader-allowed-names": json.dumps(list(rh.allowed_names)),
        }
        return {"metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE}, "data": data}

    def kubeconfig(self, url: str, user: str, groups: tuple[str, ...], namespace: str) -> dict[str, Any]:
        """A kubeconfig (kubeadm's layout) with the CA and a fresh client certificate embedded."""
        pair = self.issue_client_cert(user, groups)
        context = f"{user}@ksched-sim"

        def b64(raw: bytes) -> str:
            return base64.b64encode(raw).decode()

        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ksched-sim",
                    "cluster": {"server": url, "certificate-authority-data": b64(self.ca.cert_pem)},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(pair.cert_pem),
                        "client-key-data": b64(pair.key_pem),
                    },
                }
            ],
            "contexts": [
                {"name": context, "context": {"cluster": "ksched-sim", "user": user, "namespace": namespace}}
            ],
            "current-context": context,
            "preferences": {},
        }
