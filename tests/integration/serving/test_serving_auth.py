"""The secure port end to end: real HTTPS requests to ksched's server package, whose delegated
authentication and authorization talk over HTTP to a stand-in API server in its own process
(:mod:`tests.integration.serving.standin`; the embedded cluster takes its place once it serves
TokenReview, SubjectAccessReview and the authentication ConfigMap).

Not ported: upstream's dynamic serving-certificate reload (ksched loads --tls-cert-file once)."""

from __future__ import annotations

import concurrent.futures
import json
import logging
import socket
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from ksched.kube.client import ApiClient
from ksched.kube.connection import Connection
from ksched.kube.io_thread import IOThread
from ksched.server import Endpoints, Health, start_serving
from ksched.server.options import (
    AuthenticationOptions,
    AuthorizationOptions,
    SecureServingOptions,
    ServingOptions,
)
from tests.integration.support import http_get
from tests.unit.server.pki import CA

ALLOW = [["alice", "get", "/metrics"], ["scraper-cert", "get", "/metrics"], ["proxied", "get", "/metrics"]]


@dataclass
class StandIn:
    url: str
    state_file: Path
    state: dict[str, Any]

    def update(self, **changes: Any) -> None:
        self.state.update(changes)
        self.state_file.write_text(json.dumps(self.state))

    def counts(self) -> dict[str, int]:
        return dict(json.loads(http_get(f"{self.url}/counts")[1]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[StandIn]:
    state_file = tmp_path / "standin.json"
    state: dict[str, Any] = {
        "tokens": {"good": {"username": "alice", "groups": ["dev"]}, "other": {"username": "mallory"}},
        "allow": ALLOW,
        "configmap": None,
    }
    state_file.write_text(json.dumps(state))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.serving.standin", str(state_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("port="), line
        yield StandIn(f"http://127.0.0.1:{line[5:]}", state_file, state)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _kubeconfig(path: Path, server: str) -> str:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


@dataclass
class Server:
    base: str
    insecure: str
    ca_pem: bytes
    io: IOThread

    def get(self, path: str, *, cert: tuple[str, str] | None = None, **headers: str) -> tuple[int, str]:
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        if cert:
            ctx.load_cert_chain(*cert)
        # Generous: a review the API server fails is retried with backoff before the 500 comes.
        return http_get(self.base + path, context=ctx, headers=headers, timeout_s=30.0)


def _serve(tmp_path: Path, standin: StandIn, *, profiling: bool = False) -> Server:
    kc = _kubeconfig(tmp_path / "auth.kubeconfig", standin.url)
    port = _free_port()
    options = ServingOptions(
        secure=SecureServingOptions(secure_port=port, cert_dir=str(tmp_path / "certs")),
        authentication=AuthenticationOptions(kubeconfig=kc),
        authorization=AuthorizationOptions(kubeconfig=kc),
        insecure_port=0,
    )
    registry = CollectorRegistry()
    Counter("scheduler_test_total", "a series to scrape", registry=registry).inc()
    endpoints = Endpoints(
        registry=registry,
        health=Health(synced=True),
        componentconfig=lambda: {"kind": "KubeSchedulerConfiguration"},
        request_profile=(lambda _s: concurrent.futures.Future()) if profiling else None,
    )
    io = IOThread().start()

    def make(connection: Connection, role: str) -> ApiClient:
        return io.client(connection, user_agent=f"test {role}")

    serving = start_serving(io, options, endpoints, make)
    chain = (tmp_path / "certs" / "kube-scheduler.crt").read_bytes()
    ca = chain[chain.index(b"-----BEGIN CERTIFICATE-----", 10) :]
    return Server(
        f"https://localhost:{serving.secure_port}", f"http://127.0.0.1:{serving.insecure_port}", ca, io
    )


@pytest.fixture
def server(tmp_path: Path, standin: StandIn) -> Iterator[Server]:
    s = _serve(tmp_path, standin)
    try:
        yield s
    finally:
        s.io.stop()


def _status(body: str) -> dict[str, Any]:
    return dict(json.loads(body))


def test_anonymous_scrape_is_forbidden_and_probes_are_allowed(server: Server) -> None:
    code, body = server.get("/metrics")
    assert code == 403
    assert _status(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    assert server.get("/healthz") == (200, "ok")
    assert server.get("/livez?verbose") == (200, "[+]ping ok\nlivez check passed\n")
    assert server.get("/readyz?verbose") == (
        200,
        "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n",
    )


def test_bearer_tokens(server: Server, standin: StandIn) -> None:
    code, body = server.get("/metrics", Authorization="Bearer good")
    assert code == 200 and "scheduler_test_total 1.0" in body
    code, body = server.get("/metrics", Authorization="Bearer other")
    assert code == 403
    assert _status(body)["message"] == 'forbidden: User "mallory" cannot get path "/metrics"'
    code, body = server.get("/metrics", Authorization="Bearer wrong")
    assert code == 401
    assert _status(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    assert server.get("/healthz", Authorization="Bearer wrong")[0] == 401, "authentication comes first"


def test_answers_are_cached(server: Server, standin: StandIn) -> None:
    before = standin.counts()
    for _ in range(3):
        assert server.get("/metrics", Authorization="Bearer good")[0] == 200
        assert server.get("/metrics", Authorization="Bearer wrong")[0] == 401
    after = standin.counts()
    assert after.get("tokenreviews", 0) - before.get("tokenreviews", 0) == 2
    assert after.get("subjectaccessreviews", 0) - before.get("subjectaccessreviews", 0) == 1


def test_a_failing_review_is_a_500(server: Server, standin: StandIn) -> None:
    assert server.get("/metrics", Authorization="Bearer good")[0] == 200  # cached from here on
    standin.update(status=503)
    code, body = server.get("/configz", Authorization="Bearer good")
    assert code == 500 and body.startswith('Internal Server Error: "/configz": ')


def test_client_certificates_from_the_configmap(tmp_path: Path, standin: StandIn) -> None:
    client_ca, proxy_ca = CA("client-ca"), CA("front-proxy-ca")
    standin.update(
        configmap={
            "client-ca-file": client_ca.pem.decode(),
            "requestheader-client-ca-file": proxy_ca.pem.decode(),
            "requestheader-allowed-names": '["front-proxy-client"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        }
    )
    s = _serve(tmp_path, standin)
    try:
        scraper = client_ca.issue("scraper-cert", ("monitoring",)).write(tmp_path, "scraper")
        assert s.get("/metrics", cert=scraper)[0] == 200
        proxy = proxy_ca.issue("front-proxy-client").write(tmp_path, "proxy")
        assert s.get("/metrics", cert=proxy, **{"X-Remote-User": "proxied"})[0] == 200
        code, body = s.get("/metrics", cert=proxy, **{"X-Remote-User": "nobody"})
        assert code == 403 and _status(body)["message"].startswith('forbidden: User "nobody" cannot')
        wrong_name = proxy_ca.issue("someone").write(tmp_path, "someone")
        assert s.get("/metrics", cert=wrong_name, **{"X-Remote-User": "proxied"})[0] == 401
    finally:
        s.io.stop()


def test_insecure_port_and_debug_paths(tmp_path: Path, standin: StandIn) -> None:
    s = _serve(tmp_path, standin)
    try:
        code, body = http_get(s.insecure + "/metrics")
        assert code == 200 and "scheduler_test_total" in body
        assert _status(http_get(s.insecure + "/configz")[1]) == {
            "componentconfig": {"kind": "KubeSchedulerConfiguration"}
        }
        assert http_get(s.insecure + "/debug/pprof/profile")[0] == 404, "profiling is off"
        assert http_get(s.insecure + "/debug/flags/v")[0] == 404
    finally:
        s.io.stop()
    (tmp_path / "p").mkdir()
    s = _serve(tmp_path / "p", standin, profiling=True)
    try:
        request = urllib.request.Request(s.insecure + "/debug/flags/v", data=b"3", method="PUT")
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert resp.read() == b"successfully set klog.logging.verbosity to 3\n"
        assert http_get(s.insecure + "/debug/flags/v")[0] == 406
        assert http_get(s.insecure + "/debug/pprof/heap")[0] == 404
    finally:
        s.io.stop()
        logging.getLogger().setLevel(logging.WARNING)
