"""An HTTPS extender: ``enableHTTPS`` with ``tlsConfig.caData`` and ``serverName`` (the certificate
names ``extender.test`` only, so the connection verifies only with ``serverName``), and the error a
failed verification gives."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

from conftest import ExtenderServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sched_harness import KschedProcess, bound_count, events_about, wait_until

from ksched.sim import SimCluster
from ksched.sim.workloads import node_template, pod_template

HEAD = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
extenders:
"""


def self_signed(tmp: Path) -> tuple[Path, Path, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "extender.test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("extender.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = tmp / "ext.crt", tmp / "ext.key"
    cert_path.write_bytes(pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path, pem


def test_https_extender_with_ca_and_server_name(
    sim: SimCluster,
    tmp_path: Path,
    start_extender: Callable[..., ExtenderServer],
    start_ksched: Callable[[str], KschedProcess],
) -> None:
    sim.add_nodes(2, node_template(labels={"extender": "yes"}), name_prefix="yes-")
    sim.add_nodes(2, node_template(), name_prefix="no-")
    cert, key, pem = self_signed(tmp_path)
    ext = start_extender(
        "--mode", "filter", "--filter-label", "extender=yes", "--tls-cert", str(cert), "--tls-key", str(key)
    )
    assert ext.url.startswith("https://")
    tls = {"caData": base64.b64encode(pem).decode(), "serverName": "extender.test"}
    good = {"urlPrefix": ext.url, "filterVerb": "filter", "enableHTTPS": True, "tlsConfig": tls}
    start_ksched(HEAD + f"- {json.dumps(good)}\n")
    sim.add_pods(4, pod_template())
    wait_until(lambda: bound_count(sim) == 4, what="4 pods bound through the HTTPS extender")
    for p in sim.store.list("pods", "default"):
        assert p["spec"]["nodeName"].startswith("yes-")


def test_https_extender_whose_certificate_does_not_verify(
    sim: SimCluster,
    tmp_path: Path,
    start_extender: Callable[..., ExtenderServer],
    start_ksched: Callable[[str], KschedProcess],
) -> None:
    sim.add_nodes(1, node_template())
    cert, key, pem = self_signed(tmp_path)
    ext = start_extender("--mode", "filter", "--tls-cert", str(cert), "--tls-key", str(key))
    tls = {"caData": base64.b64encode(pem).decode()}  # no serverName: 127.0.0.1 is not in the certificate
    bad = {"urlPrefix": ext.url, "filterVerb": "filter", "enableHTTPS": True, "tlsConfig": tls}
    start_ksched(HEAD + f"- {json.dumps(bad)}\n")
    sim.add_pods(1, pod_template(), name_prefix="tls-")
    want = f'Post "{ext.url}/filter": '

    def failed() -> bool:
        notes = [str(e.get("note", "")) for e in events_about(sim, "tls-0", "FailedScheduling")]
        return any(n.startswith(want) and "certificate" in n.lower() for n in notes)

    wait_until(failed, what="a FailedScheduling event naming the certificate failure")
    assert bound_count(sim) == 0
