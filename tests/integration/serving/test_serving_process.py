"""A whole ``ksched run`` process against the embedded cluster: the secure port answers as
kube-scheduler's does without any delegated-auth configuration (no kubeconfig for it, not in a
cluster: anonymous only, upstream's warnings), and the insecure port serves /metrics/resources
and /configz from the running scheduler."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.sim import SimCluster
from ksched.sim.workloads import pod_template
from tests.integration.support import http_get, probe_get, wait_until

SCRIPT = """
import logging, sys
from ksched.config.overrides import FlagOverrides
from ksched.runner import RunOptions, run
from ksched.server.options import (
    AuthenticationOptions, AuthorizationOptions, SecureServingOptions, ServingOptions,
)
logging.basicConfig(level=logging.INFO)
secure, insecure = int(sys.argv[1]), int(sys.argv[2])
kubeconfig, auth, elect = sys.argv[3:6]
serving = ServingOptions(
    secure=SecureServingOptions(secure_port=secure),
    authentication=AuthenticationOptions(kubeconfig=auth),
    authorization=AuthorizationOptions(kubeconfig=auth),
    insecure_port=insecure,
)
flags = FlagOverrides(given={"kubeconfig": kubeconfig, "leader-elect": elect == "elect"})
options = RunOptions(overrides=flags, serving=serving, bind_worker=False)
sys.exit(run(options))
"""
"""argv: secure port, insecure port, kubeconfig, auth kubeconfig ("" : none), "elect" or "no"."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(
    kubeconfig: Path, tmp_path: Path, auth: str = "", elect: str = "no"
) -> Iterator[tuple[int, int, Path]]:
    secure, insecure = _free_port(), _free_port()
    log = tmp_path / "ksched.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(secure), str(insecure), str(kubeconfig), auth, elect],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_until(
            lambda: probe_get(f"http://127.0.0.1:{insecure}/readyz")[0] == 200 or proc.poll() is not None,
            timeout_s=60,
            what="ksched ready",
        )
        assert proc.poll() is None, log.read_text()
        yield secure, insecure, log
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def ksched(kubeconfig: Path, tmp_path: Path) -> Iterator[tuple[int, int, Path]]:
    yield from _start(kubeconfig, tmp_path)


def _unverified() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def test_secure_port_without_delegation_is_anonymous_only(ksched: tuple[int, int, Path]) -> None:
    secure, _, log = ksched
    base = f"https://127.0.0.1:{secure}"
    assert http_get(f"{base}/healthz", context=_unverified()) == (200, "ok")
    code, body = http_get(f"{base}/metrics", context=_unverified(), headers={"Authorization": "Bearer x"})
    assert code == 403, "no TokenReview client: a token is not looked at, the request is anonymous"
    assert json.loads(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    text = log.read_text()
    assert "No authentication-kubeconfig provided in order to lookup client-ca-file" in text
    assert "No authorization-kubeconfig provided, so SubjectAccessReview" in text
    assert "Generated self-signed cert in-memory" in text
    with pytest.raises(OSError):
        http_get(f"http://127.0.0.1:{secure}/healthz")


def test_resources_and_configz(sim: SimCluster, ksched: tuple[int, int, Path]) -> None:
    _, insecure, _ = ksched
    base = f"http://127.0.0.1:{insecure}"
    sim.add_pods(1, pod_template(cpu="250m", memory="64Mi"), name_prefix="res-")

    def line() -> str:
        body = http_get(f"{base}/metrics/resources")[1]
        return next(
            (
                x
                for x in body.splitlines()
                if 'pod="res-0"' in x and 'resource="cpu"' in x and 'node="node' in x
            ),
            "",
        )

    found = wait_until(line, timeout_s=30, what="res-0 in /metrics/resources")
    assert 'scheduler="default-scheduler"' in found and 'unit="cores"' in found and found.endswith(" 0.25")
    memory = [x for x in http_get(f"{base}/metrics/resources")[1].splitlines() if 'resource="memory"' in x]
    assert any('pod="res-0"' in x and 'unit="bytes"' in x and x.endswith(" 6.7108864e+07") for x in memory)
    config = json.loads(http_get(f"{base}/configz")[1])["componentconfig"]
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["leaderElection"]["leaseDuration"] == "15s"


def test_a_standby_still_authenticates_scrapes(sim: SimCluster, kubeconfig: Path, tmp_path: Path) -> None:
    """The delegated-auth clients are not fenced: a replica that does not hold the Lease (held here
    by another identity for an hour) still posts TokenReviews and SubjectAccessReviews."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "someone-else",
            "leaseDurationSeconds": 3600,
            "renewTime": now,
            "acquireTime": now,
        },
    }
    sim.store.create("leases", lease, namespace="kube-system")
    state_file = tmp_path / "standin.json"
    state_file.write_text(
        json.dumps({"tokens": {"t": {"username": "alice"}}, "allow": [["alice", "get", "/metrics"]]})
    )
    standin = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.serving.standin", str(state_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert standin.stdout is not None
        port = standin.stdout.readline().strip().removeprefix("port=")
        auth = tmp_path / "auth.kubeconfig"
        auth.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        run = tmp_path / "run"
        run.mkdir()
        for secure, _, log in _start(kubeconfig, run, auth=str(auth), elect="elect"):
            base = f"https://127.0.0.1:{secure}"
            code, body = http_get(
                f"{base}/metrics", context=_unverified(), headers={"Authorization": "Bearer t"}
            )
            assert code == 200, body
            assert "became leader" not in log.read_text(), "this replica is a standby"
            assert http_get(f"{base}/metrics", context=_unverified())[0] == 403
    finally:
        standin.terminate()
        standin.wait(timeout=10)
        if standin.stdout is not None:
            standin.stdout.close()
