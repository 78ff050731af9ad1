"""Security review, as tests: what ksched exposes and what it writes to its logs.

- ``ksched run`` serves HTTPS (a self-signed certificate when none is given) on 127.0.0.1 unless told
  otherwise; the listening socket is checked in /proc/net/tcp, not only the log line. Without a
  delegated-auth kubeconfig every request is anonymous: /healthz answers, /metrics is forbidden.
- /debug/profile answers 404 when ``enableProfiling`` is false (checked on the plain-HTTP
  ``--insecure-port``, which has no authorization to get in the way).
- ``--tls-cert-file`` / ``--tls-private-key-file`` serve HTTPS with that certificate (and refuse plain
  HTTP); a missing or mismatched key stops the command with exit 2 and a message naming the files.
- A bearer token and the kubeconfig's contents never reach the log, even at ``-v 10``.
- ``ksched sim serve`` refuses a non-loopback ``--address`` unless ``--allow-remote`` is given.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ksched.sim import SimCluster
from ksched.sim.cli import is_loopback
from ksched.sim.workloads import pod_template
from tests.integration.scheduler.sched_harness import bound_count, write_config
from tests.integration.support import http_get, wait_until

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
SERVING = re.compile(r"serving /metrics.* on (https?)://([^:\s]+):(\d+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Run:
    """``python -m ksched -v V run ...`` with its log in a file."""

    def __init__(self, tmp: Path, args: list[str], verbosity: int = 2) -> None:
        self.log_path = tmp / f"run-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("wb")
        cmd = [sys.executable, "-m", "ksched", "-v", str(verbosity), "run", "--leader-elect=false"]
        cmd += [f"--secure-port={_free_port()}"]
        env = dict(ENV)
        if "--kubeconfig" in args and "--config" in args:
            # kube-scheduler ignores --kubeconfig when --config is given: $KUBECONFIG carries it.
            at = args.index("--kubeconfig")
            env["KUBECONFIG"] = args[at + 1]
            args = args[:at] + args[at + 2 :]
        self.proc = subprocess.Popen([*cmd, *args], stdout=self._log, stderr=self._log, env=env)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def serving(self) -> tuple[str, str, int]:
        def find() -> tuple[str, str, int] | None:
            assert self.proc.poll() is None, f"ksched exited early:\n{self.log()}"
            m = SERVING.search(self.log())
            return (m.group(1), m.group(2), int(m.group(3))) if m else None

        return wait_until(find, timeout_s=60, what="ksched to serve")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        finally:
            self._log.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for r in started:
        r.close()


def _listeners(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} spells them) listening on ``port``."""
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].split(":")
            if int(hexport, 16) == port and fields[3] == "0A":  # LISTEN
                out.add(addr)
    return out


def test_security_run_serves_on_loopback_by_default(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, runs: list[Run]
) -> None:
    r = Run(tmp_path, ["--kubeconfig", str(kubeconfig), "--config", str(write_config(tmp_path / "c.yaml"))])
    runs.append(r)
    scheme, host, port = r.serving()
    assert (scheme, host) == ("https", "127.0.0.1")
    assert _listeners(port) == {"0100007F"}, _listeners(port)  # 127.0.0.1 only, no 0.0.0.0 or ::
    unverified = ssl._create_unverified_context()  # the generated certificate is self-signed
    assert http_get(f"https://127.0.0.1:{port}/healthz", timeout_s=10, context=unverified) == (200, "ok")
    status, _ = http_get(f"https://127.0.0.1:{port}/metrics", timeout_s=10, context=unverified)
    assert status == 403  # anonymous: no delegated authorization to ask
    assert r.stop() == 0, r.log()


@pytest.mark.parametrize("enabled", [None, False, True], ids=["absent", "false", "true"])
def test_security_debug_profile_only_when_enabled(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, runs: list[Run], enabled: bool | None
) -> None:
    config = write_config(tmp_path / "c.yaml")
    if enabled is not None:  # absent: on, as upstream's default
        config.write_text(config.read_text() + f"enableProfiling: {str(enabled).lower()}\n")
    plain = ["--secure-port=0", f"--insecure-port={_free_port()}"]
    r = Run(tmp_path, ["--kubeconfig", str(kubeconfig), "--config", str(config), *plain])
    runs.append(r)
    _, _, port = r.serving()
    status, body = http_get(f"http://127.0.0.1:{port}/debug/profile?seconds=0.2", timeout_s=10)
    if enabled is not False:
        assert status == 200
    else:
        assert status == 404
        assert "profiling is disabled" in body
    assert r.stop() == 0, r.log()


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, valid for a day, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    alt = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1)).add_extension(alt, critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = tmp / "tls.crt", tmp / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_security_tls_serving(sim: SimCluster, kubeconfig: Path, tmp_path: Path, runs: list[Run]) -> None:
    cert, key = _self_signed(tmp_path)
    r = Run(
        tmp_path,
        [
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(write_config(tmp_path / "c.yaml")),
            "--tls-cert-file",
            str(cert),
            "--tls-private-key-file",
            str(key),
        ],
    )
    runs.append(r)
    scheme, host, port = r.serving()
    assert (scheme, host) == ("https", "127.0.0.1")
    trusted = ssl.create_default_context(cafile=str(cert))
    assert http_get(f"https://127.0.0.1:{port}/healthz", timeout_s=10, context=trusted) == (200, "ok")
    status, text = http_get(f"https://127.0.0.1:{port}/metrics", timeout_s=10, context=trusted)
    assert status == 403 and 'User \\"system:anonymous\\" cannot get path \\"/metrics\\"' in text, text
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):  # not trusted by default
        http_get(f"https://127.0.0.1:{port}/healthz", timeout_s=10, context=ssl.create_default_context())
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):  # no plain HTTP on that port
        http_get(f"http://127.0.0.1:{port}/healthz", timeout_s=10)
    assert r.stop() == 0, r.log()


@pytest.mark.parametrize("problem", ["missing-key", "wrong-file", "only-cert"])
def test_security_tls_bad_files_exit_2(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, runs: list[Run], problem: str
) -> None:
    cert, _ = _self_signed(tmp_path)
    args = ["--kubeconfig", str(kubeconfig), "--tls-cert-file", str(cert)]
    if problem == "missing-key":
        args += ["--tls-private-key-file", str(tmp_path / "nope.key")]
    elif problem == "wrong-file":
        args += ["--tls-private-key-file", str(kubeconfig)]
    r = Run(tmp_path, args)
    runs.append(r)
    assert r.proc.wait(60) == 2, r.log()
    log = r.log()
    assert "Traceback" not in log
    assert "--tls-cert-file" in log or str(cert) in log, log


def test_security_no_token_or_kubeconfig_in_logs(sim: SimCluster, tmp_path: Path, runs: list[Run]) -> None:
    token = "ksched-test-token-4f1c2b9e7d"
    client_key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nnot-a-real-key-9c3e\n").decode()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    doc = yaml.safe_load(kubeconfig.read_text())
    doc["users"][0]["user"] = {"token": token}
    unused = {"client-key-data": client_key, "password": "pw-7a6b5c4d"}
    doc["users"].append({"name": "unused", "user": unused})
    kubeconfig.write_text(yaml.safe_dump(doc))
    sim.add_nodes(3)
    sim.add_pods(20, pod_template(cpu="10m", memory="10Mi"))
    r = Run(
        tmp_path,
        ["--kubeconfig", str(kubeconfig), "--config", str(write_config(tmp_path / "c.yaml"))],
        verbosity=10,
    )
    runs.append(r)
    r.serving()
    wait_until(lambda: bound_count(sim) == 20, timeout_s=60, what="20 pods bound")
    assert r.stop() == 0, r.log()
    log = r.log()
    assert "DEBUG" in log, "the run did not log at debug level"
    for secret in (token, client_key, "pw-7a6b5c4d", "not-a-real-key", "Bearer "):
        assert secret not in log, f"{secret!r} appears in the log"


def test_security_sim_refuses_non_loopback_unless_allowed(tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "example.com", ""))
    cmd = [sys.executable, "-m", "ksched", "sim", "serve", "--port", "0"]
    refused = subprocess.run(
        [*cmd, "--address", "0.0.0.0"], capture_output=True, text=True, env=ENV, timeout=60, check=False
    )
    assert refused.returncode == 2, refused.stderr
    assert "non-loopback" in refused.stderr and "--allow-remote" in refused.stderr
    proc = subprocess.Popen(
        [*cmd, "--address", "0.0.0.0", "--allow-remote"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving on http://0.0.0.0:" in line, line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
