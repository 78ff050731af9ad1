"""kubeadm's kube-scheduler static pod, with only its image and command name changed, runs ksched.

The manifest (``data/kubeadm-kube-scheduler.yaml``) is kept as kubeadm writes it. The test plays the
kubelet's part without a container engine:

- the container's command runs as a process, its command name ``kube-scheduler`` replaced by the
  ``ksched-scheduler`` console script (the one change an operator makes besides the image);
- each hostPath volume is "mounted" by pointing the paths under its mountPath at a test directory
  (the only rewrite of the arguments, which is what a bind mount does);
- the startup, liveness and readiness probes are run as the kubelet runs them: HTTPS GETs to the
  named port, certificate not verified, success for a status in 200..399.

The API server is the embedded cluster in its secure mode (``ksched sim serve --secure``): client
certificates, the bootstrap RBAC policy, TokenReview, SubjectAccessReview and the
extension-apiserver-authentication ConfigMap. ``scheduler.conf`` is a kubeconfig for the user
``system:kube-scheduler``, as kubeadm writes it. Then a Prometheus-like scrape of /metrics is
checked with and without a token the RBAC lets through.
"""

from __future__ import annotations

import importlib.metadata
import os
import ssl
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.support import http_get, wait_until

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = Path(__file__).with_name("data") / "kubeadm-kube-scheduler.yaml"
SCRAPER_RBAC = ROOT / "deploy" / "examples" / "metrics-scraper-rbac.yaml"
PROMETHEUS = "system:serviceaccount:monitoring:prometheus"
TOKENS = (
    f'prom-token,{PROMETHEUS},11,"system:serviceaccounts,system:serviceaccounts:monitoring"\n'
    "nobody-token,nobody,12\n"
)


def _manifest() -> dict[str, Any]:
    return yaml.safe_load(MANIFEST.read_text())


def _entrypoint(name: str) -> list[str]:
    """How the installed console script ``name`` runs (its entry point, in this interpreter)."""
    (script,) = importlib.metadata.entry_points(group="console_scripts", name=name)
    module, func = script.value.split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]


def _mounted(args: list[str], pod: dict[str, Any], host_root: Path) -> list[str]:
    """``args`` with every hostPath volume's mountPath pointing at the same path under ``host_root``."""
    container = pod["spec"]["containers"][0]
    mounts = [m["mountPath"] for m in container.get("volumeMounts", ())]
    out = []
    for arg in args:
        for path in mounts:
            arg = arg.replace(path, str(host_root) + path)
        out.append(arg)
    return out


def _probe(container: dict[str, Any], kind: str) -> tuple[int, str]:
    """One run of the container's ``kind`` probe, as the kubelet makes it."""
    get = container[kind]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    port = ports.get(get["port"], get["port"])
    url = f"{get['scheme'].lower()}://{get['host']}:{port}{get['path']}"
    try:
        return http_get(url, timeout_s=container[kind]["timeoutSeconds"], context=_unverified())
    except OSError as exc:
        return 0, str(exc)


def _unverified() -> ssl.SSLContext:
    """The kubelet does not verify a probe's certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class _Processes:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


@pytest.fixture
def processes() -> Iterator[_Processes]:
    procs = _Processes()
    yield procs
    procs.close()


def _secure_sim(tmp: Path, processes: _Processes, scheduler_conf: Path) -> Path:
    """``ksched sim serve --secure`` with 3 nodes; returns the admin kubeconfig once it serves."""
    tokens, admin = tmp / "tokens.csv", tmp / "admin.conf"
    tokens.write_text(TOKENS)
    log = tmp / "sim.log"
    cmd = [sys.executable, "-m", "ksched", "sim", "serve", "--secure", "--nodes", "3", "--kubeconfig-out",
           str(admin), "--user-kubeconfig", f"system:kube-scheduler={scheduler_conf}",
           "--token-auth-file", str(tokens), "--no-storage-controllers"]  # fmt: skip
    proc = processes.start(cmd, log)

    def written() -> bool:
        assert proc.poll() is None, log.read_text()
        return "kubeconfig written" in log.read_text() and scheduler_conf.exists()

    wait_until(written, timeout_s=60, what="the secure embedded cluster")
    return admin


def _kubectl(admin: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(admin), *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _wait_for_probes(container: dict[str, Any], proc: subprocess.Popen[bytes], log: Path) -> None:
    """Startup probe first (its budget: failureThreshold × periodSeconds), then readiness."""
    budget = container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"]

    def passes(kind: str) -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        return 200 <= _probe(container, kind)[0] < 400

    wait_until(lambda: passes("startupProbe"), timeout_s=budget, interval_s=0.2, what="the startup probe")
    wait_until(lambda: passes("readinessProbe"), timeout_s=60, interval_s=0.2, what="the readiness probe")
    assert passes("livenessProbe")


@pytest.mark.kubectl
def test_kubeadm_static_pod_runs_ksched(tmp_path: Path, processes: _Processes) -> None:
    pod = _manifest()
    container = pod["spec"]["containers"][0]
    assert container["command"][0] == "kube-scheduler"
    host_root = tmp_path / "host"
    scheduler_conf = host_root / "etc" / "kubernetes" / "scheduler.conf"
    scheduler_conf.parent.mkdir(parents=True)
    admin = _secure_sim(tmp_path, processes, scheduler_conf)

    args = _mounted(container["command"][1:], pod, host_root)
    log = tmp_path / "ksched.log"
    proc = processes.start([*_entrypoint("ksched-scheduler"), *args], log)
    _wait_for_probes(container, proc, log)

    for i in range(6):
        _kubectl(admin, "run", f"p{i}", "--image=nginx", "--restart=Never")

    def bound() -> bool:
        nodes = _kubectl(admin, "get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}").split()
        return len(nodes) == 6

    wait_until(bound, timeout_s=60, what="6 pods bound by ksched")
    holder = _kubectl(admin, "-n", "kube-system", "get", "lease", "kube-scheduler", "-o",
                      "jsonpath={.spec.holderIdentity}")  # fmt: skip
    assert holder, "no Lease holder"
    _check_scrapes(admin, container)
    proc.terminate()
    assert proc.wait(30) == 0, log.read_text()[-3000:]


def _check_scrapes(admin: Path, container: dict[str, Any]) -> None:
    """Delegated authentication and authorization on the secure port, TLS 1.2 or newer only."""
    _kubectl(admin, "apply", "-f", str(SCRAPER_RBAC))
    port = container["ports"][0]["containerPort"]
    url = f"https://127.0.0.1:{port}"

    def get(path: str, token: str | None = None, ctx: ssl.SSLContext | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return http_get(url + path, timeout_s=10, context=ctx or _unverified(), headers=headers)

    status, body = get("/metrics", "prom-token")
    assert status == 200 and "scheduler_schedule_attempts_total" in body, body[:500]
    assert get("/metrics")[0] == 403  # anonymous: authenticated as system:anonymous, not allowed
    assert get("/metrics", "nobody-token")[0] == 403
    assert get("/metrics", "no-such-token")[0] == 401
    assert get("/healthz") == (200, "ok")
    old = _unverified()
    with warnings.catch_warnings():  # TLS 1.1 is deprecated in Python too: that is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(OSError):
        get("/healthz", ctx=old)
