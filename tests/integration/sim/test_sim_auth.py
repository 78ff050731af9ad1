"""The embedded cluster as a secured kube-apiserver: TLS, authentication, RBAC and the review APIs.

Real HTTPS against a ``SimCluster(SimConfig(secure=True))``, the real ``kubectl``, ``ksched sim
serve --secure`` and ``ksched run`` as separate processes. Not covered here: OIDC and service
account tokens (the sim issues neither) and RBAC escalation checks on role writes (the sim does
not prevent escalation; only system:masters should write roles).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.errors import InputError
from ksched.sim import SimCluster, SimConfig

RBAC = "rbac.authorization.k8s.io"
SCHEDULER = "system:kube-scheduler"


class Client:
    """One identity talking HTTPS to a secure cluster (a client certificate, a token, or nothing)."""

    def __init__(
        self,
        cluster: SimCluster,
        tmp: Path,
        *,
        cert: tuple[bytes, bytes] | None = None,
        token: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = cluster.url
        self.ctx = ssl.create_default_context(cadata=cluster.ca_pem.decode())
        if cert is not None:
            crt, key = tmp / f"c{id(self)}.crt", tmp / f"c{id(self)}.key"
            crt.write_bytes(cert[0])
            key.write_bytes(cert[1])
            self.ctx.load_cert_chain(crt, key)
        self.headers = dict(headers or {})
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        host, port = self.url.removeprefix("https://").rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), context=self.ctx, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            hdrs = {**self.headers, **{k.replace("_", "-"): v for k, v in headers.items()}}
            if data is not None:
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                return resp.status, json.loads(raw)
            except ValueError:
                return resp.status, raw.decode()
        finally:
            conn.close()

    def get(self, path: str, **headers: str) -> tuple[int, Any]:
        return self.request("GET", path, **headers)

    def post(self, path: str, body: Any, **headers: str) -> tuple[int, Any]:
        return self.request("POST", path, body, **headers)


@pytest.fixture
def secure() -> Iterator[SimCluster]:
    cluster = SimCluster(SimConfig(secure=True))
    cluster.add_nodes(2)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def admin(secure: SimCluster, tmp_path: Path) -> Client:
    return Client(secure, tmp_path, cert=secure.issue_client_cert("root", ["system:masters"]))


@pytest.fixture
def scheduler(secure: SimCluster, tmp_path: Path) -> Client:
    return Client(secure, tmp_path, cert=secure.issue_client_cert(SCHEDULER))


def whoami(client: Client) -> dict[str, Any]:
    code, body = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert code == 201, body
    return dict(body["status"]["userInfo"])


# -- authentication ---------------------------------------------------------------------------------
def test_sim_auth_client_cert_user_and_groups(secure: SimCluster, tmp_path: Path) -> None:
    client = Client(secure, tmp_path, cert=secure.issue_client_cert("alice", ["devs", "ops"]))
    assert whoami(client) == {"username": "alice", "groups": ["devs", "ops", "system:authenticated"]}
    assert secure.url.startswith("https://127.0.0.1:")


def test_sim_auth_static_token_and_bad_token(secure: SimCluster, tmp_path: Path) -> None:
    secure.add_token("t0k3n", "bob", ["qa"], uid="42")
    assert whoami(Client(secure, tmp_path, token="t0k3n")) == {
        "username": "bob",
        "uid": "42",
        "groups": ["qa", "system:authenticated"],
    }
    code, body = Client(secure, tmp_path, token="wrong").get("/healthz")
    assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")


def test_sim_auth_token_auth_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('abc,carol,7,"g1,g2"\n')
    with SimCluster(SimConfig(secure=True, token_auth_file=str(tokens))) as cluster:
        assert whoami(Client(cluster, tmp_path, token="abc")) == {
            "username": "carol",
            "uid": "7",
            "groups": ["g1", "g2", "system:authenticated"],
        }


def test_sim_auth_anonymous_public_info_only(secure: SimCluster, tmp_path: Path) -> None:
    anon = Client(secure, tmp_path)
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert anon.get(path)[0] == 200, path
    for path in ("/api/v1/nodes", "/metrics", "/apis", "/admin/stats"):
        code, body = anon.get(path)  # kube-apiserver's default --anonymous-auth=true: 403, not 401
        assert (code, body["reason"]) == (403, "Forbidden"), path
        assert 'User "system:anonymous" cannot' in body["message"], body
    code, body = anon.get("/api/v1/nodes")
    assert body["message"] == (
        'nodes is forbidden: User "system:anonymous" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )


def test_sim_auth_front_proxy_request_headers(secure: SimCluster, tmp_path: Path) -> None:
    proxy = Client(
        secure,
        tmp_path,
        cert=secure.issue_front_proxy_cert(),
        headers={"X-Remote-User": "dave", "X-Remote-Group": "viewers", "X-Remote-Extra-Scopes": "a"},
    )
    assert whoami(proxy) == {
        "username": "dave",
        "groups": ["viewers", "system:authenticated"],
        "extra": {"scopes": ["a"]},
    }
    wrong_cn = Client(
        secure,
        tmp_path,
        cert=secure.issue_front_proxy_cert("someone-else"),
        headers={"X-Remote-User": "dave"},
    )
    assert wrong_cn.get("/healthz")[0] == 401
    # A cluster-CA certificate's requests cannot name another user in headers.
    spoof = Client(secure, tmp_path, cert=secure.issue_client_cert("eve"), headers={"X-Remote-User": "root"})
    assert whoami(spoof)["username"] == "eve"


def _tls_client(maximum: ssl.TLSVersion) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():  # the old versions are deprecated: offering them is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        ctx.maximum_version = maximum
    ctx.set_ciphers("ALL:@SECLEVEL=0")
    return ctx


def test_sim_auth_tls_1_1_and_plain_http_refused(secure: SimCluster) -> None:
    host, port = secure.url.removeprefix("https://").rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        _tls_client(ssl.TLSVersion.TLSv1_2).wrap_socket(raw) as tls,
    ):
        assert tls.version() == "TLSv1.2"
    with socket.create_connection((host, int(port)), timeout=5) as raw, pytest.raises(ssl.SSLError):
        _tls_client(ssl.TLSVersion.TLSv1_1).wrap_socket(raw)
    plain = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        plain.request("GET", "/api/v1/nodes")
        assert plain.getresponse().status == 400  # aiohttp's answer to plain HTTP on a TLS port
    except (ConnectionError, http.client.HTTPException):
        pass  # or the connection is dropped: either way no API access
    finally:
        plain.close()


# -- authorization ----------------------------------------------------------------------------------
def test_sim_auth_scheduler_policy(scheduler: Client) -> None:
    assert scheduler.get("/api/v1/nodes")[0] == 200
    assert scheduler.get("/api/v1/pods?watch=true&timeoutSeconds=0")[0] == 200
    assert scheduler.get("/apis/storage.k8s.io/v1/csinodes")[0] == 200
    cm = "/api/v1/namespaces/kube-system/configmaps"
    assert scheduler.get(f"{cm}/extension-apiserver-authentication")[0] == 200
    assert scheduler.get(f"{cm}?fieldSelector=metadata.name%3Dextension-apiserver-authentication")[0] == 200
    code, body = scheduler.get("/api/v1/namespaces/default/configmaps")
    assert code == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps is forbidden: User "system:kube-scheduler" cannot list resource "configmaps" '
        'in API group "" in the namespace "default"',
        "reason": "Forbidden",
        "details": {"kind": "configmaps"},
        "code": 403,
    }
    code, body = scheduler.request("DELETE", "/api/v1/nodes/node-0")
    assert code == 403
    assert body["message"] == (
        'nodes "node-0" is forbidden: User "system:kube-scheduler" cannot delete resource "nodes" in API '
        'group "" at the cluster scope'
    )
    assert body["details"] == {"name": "node-0", "kind": "nodes"}
    code, body = scheduler.get("/metrics")
    assert (code, body["message"], body["details"]) == (
        403,
        'forbidden: User "system:kube-scheduler" cannot get path "/metrics"',
        {},
    )
    assert scheduler.get("/admin/stats")[0] == 403


def test_sim_auth_rbac_writes_take_effect(secure: SimCluster, admin: Client, tmp_path: Path) -> None:
    frank = Client(secure, tmp_path, cert=secure.issue_client_cert("frank"))
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    assert frank.get(path)[0] == 403
    role = {
        "metadata": {"name": "lease-reader"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}],
    }
    assert admin.post(f"/apis/{RBAC}/v1/namespaces/default/roles", role)[0] == 201
    binding = {
        "metadata": {"name": "frank-leases"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "lease-reader"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "frank"}],
    }
    assert admin.post(f"/apis/{RBAC}/v1/namespaces/default/rolebindings", binding)[0] == 201
    assert frank.get(path)[0] == 200
    assert frank.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")[0] == 403
    assert admin.request("DELETE", f"/apis/{RBAC}/v1/namespaces/default/rolebindings/frank-leases")[0] == 200
    assert frank.get(path)[0] == 403


def test_sim_auth_impersonation(secure: SimCluster, admin: Client, scheduler: Client) -> None:
    assert whoami_as(admin, SCHEDULER) == {"username": SCHEDULER, "groups": ["system:authenticated"]}
    code, body = admin.request(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {},
        Impersonate_User="jane",
        Impersonate_Group="devs",
        Impersonate_Extra_Scopes="s1",
    )
    assert body["status"]["userInfo"] == {
        "username": "jane",
        "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["s1"]},
    }
    assert admin.get("/api/v1/nodes", Impersonate_Group="devs")[0] == 400
    code, body = scheduler.get("/api/v1/nodes", Impersonate_User="root")
    assert code == 403
    assert body["message"] == (
        'users "root" is forbidden: User "system:kube-scheduler" cannot impersonate resource "users" in '
        'API group "" at the cluster scope'
    )


def whoami_as(client: Client, user: str) -> dict[str, Any]:
    code, body = client.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, Impersonate_User=user
    )
    assert code == 201, body
    return dict(body["status"]["userInfo"])


# -- review APIs ------------------------------------------------------------------------------------
def test_sim_auth_token_review_shapes(secure: SimCluster, scheduler: Client) -> None:
    secure.add_token("abc", "grace", ["g"], uid="u-1")
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    code, body = scheduler.post(
        path, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "abc"}}
    )
    assert code == 201
    assert body == {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {},
        "spec": {"token": "abc"},
        "status": {
            "authenticated": True,
            "user": {"username": "grace", "uid": "u-1", "groups": ["g", "system:authenticated"]},
            "audiences": ["https://kubernetes.default.svc.cluster.local"],
        },
    }
    code, body = scheduler.post(path, {"spec": {"token": "nope"}})
    assert (code, body["status"]["user"], "authenticated" in body["status"]) == (201, {}, False)
    code, body = scheduler.post(path, {"spec": {"token": "abc", "audiences": ["other"]}})
    assert "authenticated" not in body["status"]
    assert scheduler.post(path, {"spec": {}})[0] == 400


def test_sim_auth_subject_access_review_shapes(scheduler: Client, tmp_path: Path, secure: SimCluster) -> None:
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    allowed = {
        "user": SCHEDULER,
        "resourceAttributes": {
            "verb": "get",
            "resource": "leases",
            "group": "coordination.k8s.io",
            "namespace": "kube-system",
            "name": "kube-scheduler",
        },
    }
    code, body = scheduler.post(path, {"kind": "SubjectAccessReview", "spec": allowed})
    assert code == 201
    assert body["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole '
        '"system:kube-scheduler" to User "system:kube-scheduler"',
    }
    other_lease = {**allowed, "resourceAttributes": {**allowed["resourceAttributes"], "name": "other"}}
    assert scheduler.post(path, {"spec": other_lease})[1]["status"] == {"allowed": False}
    metrics = {
        "user": "mon",
        "groups": ["system:monitoring"],
        "nonResourceAttributes": {"verb": "get", "path": "/readyz/etcd"},
    }
    assert scheduler.post(path, {"spec": metrics})[1]["status"]["allowed"] is True
    code, body = scheduler.post(path, {"spec": {"user": "x"}})
    assert code == 422
    assert body["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
        '"null": exactly one of nonResourceAttributes or resourceAttributes must be specified'
    )
    assert scheduler.post(path, {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/"}}})[0] == 422
    # Creating reviews needs system:auth-delegator (or the scheduler's own role).
    nobody = Client(secure, tmp_path, cert=secure.issue_client_cert("nobody"))
    assert nobody.post(path, {"spec": allowed})[0] == 403
    code, body = nobody.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}},
    )
    assert (code, body["status"]["allowed"]) == (201, True)


def test_sim_auth_reviews_in_discovery(admin: Client) -> None:
    for gv, plural in (
        ("authentication.k8s.io/v1", "tokenreviews"),
        ("authorization.k8s.io/v1", "subjectaccessreviews"),
        ("authorization.k8s.io/v1", "selfsubjectaccessreviews"),
    ):
        code, body = admin.get(f"/apis/{gv}")
        assert code == 200
        res = {r["name"]: r for r in body["resources"]}
        assert res[plural]["verbs"] == ["create"]
        assert res[plural]["namespaced"] is False
    assert admin.get("/apis/authorization.k8s.io/v1/subjectaccessreviews")[0] == 405


# -- the trust ConfigMap ----------------------------------------------------------------------------
def test_sim_auth_extension_apiserver_authentication_configmap(secure: SimCluster, admin: Client) -> None:
    code, cm = admin.get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")
    assert code == 200
    data = cm["data"]
    assert data["client-ca-file"] == secure.ca_pem.decode()
    assert data["requestheader-client-ca-file"] == secure.front_proxy_ca.decode()
    assert data["requestheader-allowed-names"] == '["front-proxy-client"]'
    assert data["requestheader-username-headers"] == '["X-Remote-User"]'
    assert data["requestheader-group-headers"] == '["X-Remote-Group"]'
    assert data["requestheader-extra-headers-prefix"] == '["X-Remote-Extra-"]'
    assert data["requestheader-uid-headers"] == '["X-Remote-Uid"]'
    assert sorted(data) == sorted(
        [
            "client-ca-file",
            "requestheader-client-ca-file",
            "requestheader-allowed-names",
            "requestheader-username-headers",
            "requestheader-group-headers",
            "requestheader-extra-headers-prefix",
            "requestheader-uid-headers",
        ]
    )


# -- plain mode -------------------------------------------------------------------------------------
def test_sim_auth_plain_mode_unaffected(sim: SimCluster) -> None:
    from tests.integration.sim.simhttp import request

    assert sim.api._guard is None  # no per-request auth work at all
    assert sim.url.startswith("http://")
    assert request(sim.url, "GET", "/api/v1/nodes")[0] == 200
    assert request(sim.url, "GET", "/api/v1/namespaces/kube-system/configmaps")[2]["items"] == []
    assert request(sim.url, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")[2]["items"] == []
    sim.add_token("plain", "henry", ["g"])
    code, _, body = request(
        sim.url,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json.dumps({"spec": {"token": "plain"}}),
    )
    assert (code, body["status"]["user"]["username"]) == (201, "henry")
    sar = {
        "spec": {
            "user": "henry",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "get", "resource": "pods"},
        }
    }
    code, _, body = request(
        sim.url, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", json.dumps(sar)
    )
    assert (code, body["status"]) == (201, {"allowed": True})
    with pytest.raises(RuntimeError, match="secure"):
        sim.issue_client_cert("x")
    with pytest.raises(InputError, match="need a secure cluster"):
        sim.write_kubeconfig("unused", user="x")


# -- real clients -----------------------------------------------------------------------------------
def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60
    )


def test_sim_auth_kubectl(secure: SimCluster, tmp_path: Path) -> None:
    admin_conf = secure.write_kubeconfig(tmp_path / "admin.conf")
    assert oct(admin_conf.stat().st_mode & 0o777) == "0o600"
    doc = yaml.safe_load(admin_conf.read_text())
    assert set(doc["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}
    assert base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"]) == secure.ca_pem
    out = kubectl(admin_conf, "get", "nodes", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["node/node-0", "node/node-1"]
    yes = kubectl(admin_conf, "auth", "can-i", "create", "pods", "--subresource=binding", f"--as={SCHEDULER}")
    assert yes.stdout.strip() == "yes", yes.stderr
    no = kubectl(admin_conf, "auth", "can-i", "get", "/metrics", f"--as={SCHEDULER}")
    assert no.stdout.strip() == "no"
    sched_conf = secure.write_kubeconfig(tmp_path / "scheduler.conf", user=SCHEDULER)
    me = kubectl(sched_conf, "auth", "whoami", "-o", "json")
    assert me.returncode == 0, me.stderr
    assert json.loads(me.stdout)["status"]["userInfo"] == {
        "username": SCHEDULER,
        "groups": ["system:authenticated"],
    }
    assert kubectl(sched_conf, "get", "pods", "-A").returncode == 0
    denied = kubectl(sched_conf, "get", "configmaps")
    assert denied.returncode != 0
    assert 'User "system:kube-scheduler" cannot list resource "configmaps"' in denied.stderr


def _serve(*extra: str) -> tuple[subprocess.Popen[str], str]:
    """``ksched sim serve --secure`` until its storage controllers run (they start after the
    kubeconfigs are written, and reach the server with their own token: that works too)."""
    cmd = [sys.executable, "-m", "ksched", "sim", "serve", "--secure", "--nodes", "2", *extra]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ)
    )
    assert proc.stdout is not None
    url, lines = "", []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "serving on" in line:
            url = line.split()[-1]
        if "storage controllers running" in line:
            return proc, url
    proc.kill()
    raise AssertionError("".join(lines))


def test_sim_auth_serve_secure_writes_kubeconfigs_and_a_scheduler_runs(tmp_path: Path) -> None:
    """``ksched sim serve --secure`` with kubeadm's scheduler.conf, and ``ksched run`` on it with
    leader election: informers, the Lease, bindings and events all pass the bootstrap policy."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("s3cret,ivy,1\n")
    admin_conf, sched_conf = tmp_path / "admin.conf", tmp_path / "scheduler.conf"
    proc, url = _serve(
        "--kubeconfig-out",
        str(admin_conf),
        "--token-auth-file",
        str(tokens),
        "--user-kubeconfig",
        f"{SCHEDULER}={sched_conf}",
        "--cert-dir",
        str(tmp_path / "pki"),
    )
    sched: subprocess.Popen[bytes] | None = None
    try:
        assert url.startswith("https://127.0.0.1:")
        pki = tmp_path / "pki"
        for stem in ("ca", "front-proxy-ca", "apiserver", "front-proxy-client"):
            assert (pki / f"{stem}.crt").exists() and (pki / f"{stem}.key").stat().st_mode & 0o077 == 0, stem
        assert yaml.safe_load(sched_conf.read_text())["users"][0]["name"] == SCHEDULER
        log = tmp_path / "scheduler.log"
        with open(log, "wb") as out:
            sched = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ksched",
                    "run",
                    "--kubeconfig",
                    str(sched_conf),
                    "--secure-port",
                    "0",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
            )
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        pod_file = tmp_path / "pod.json"
        pod_file.write_text(json.dumps(pod))
        assert kubectl(admin_conf, "create", "-f", str(pod_file)).returncode == 0
        deadline = time.monotonic() + 60
        node = ""
        while time.monotonic() < deadline and not node:
            node = kubectl(admin_conf, "get", "pod", "p", "-o", "jsonpath={.spec.nodeName}").stdout.strip()
            time.sleep(0.2)
        assert node.startswith("node-"), log.read_text()[-3000:]
        lease = kubectl(admin_conf, "get", "lease", "-n", "kube-system", "kube-scheduler", "-o", "name")
        assert lease.stdout.strip() == "lease.coordination.k8s.io/kube-scheduler", lease.stderr
        assert "Forbidden" not in log.read_text() and "forbidden" not in log.read_text()
    finally:
        if sched is not None:
            sched.send_signal(signal.SIGTERM)
            sched.wait(30)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()
