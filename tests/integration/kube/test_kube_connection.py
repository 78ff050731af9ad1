"""Loading the API configuration: --kubeconfig, KUBECONFIG, in-cluster, credentials and their refresh."""

from __future__ import annotations

import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.errors import ApiError, InputError
from ksched.kube import ApiClient, IOThread, KubeConfigError, incluster_connection, load_connection
from ksched.kube.client import USER_AGENT
from ksched.sim import ErrorRule, FaultConfig, SimCluster


def _kubeconfig(
    path: Path, server: str, user: dict[str, Any], cluster_extra: dict[str, Any] | None = None
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster_extra or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _exec_plugin(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """An exec credential plugin that hands out ``tok-1``, ``tok-2``, ... (one per run)."""
    counter = tmp_path / "runs"
    script = tmp_path / "cred.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "p.write_text(str(n))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',\n"
        "                  'status': {'token': f'tok-{n}'}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    return user, counter


def test_explicit_kubeconfig_reaches_the_sim(sim: SimCluster, kubeconfig: Path, io: IOThread) -> None:
    conn = load_connection(str(kubeconfig))
    assert conn.server == sim.url
    assert conn.ssl is None
    assert conn.credentials.header is None
    assert "--kubeconfig" in conn.source
    client = io.client(conn)
    ns = io.run(client.get("/api/v1/namespaces/default"))
    assert ns["metadata"]["name"] == "default"
    assert USER_AGENT.startswith("ksched/")


def test_kubeconfig_env_is_used_when_no_path_given(
    sim: SimCluster, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    conn = load_connection()
    assert conn.server == sim.url
    assert "KUBECONFIG" in conn.source


def test_unknown_context_is_a_clear_error(kubeconfig: Path) -> None:
    with pytest.raises(KubeConfigError, match="nope") as info:
        load_connection(str(kubeconfig), context="nope")
    assert isinstance(info.value, InputError)


def test_missing_explicit_file_does_not_fall_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "also-missing"))
    with pytest.raises(KubeConfigError, match="no such file"):
        load_connection(str(tmp_path / "missing"))


def test_nothing_configured_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeConfigError, match="--kubeconfig") as info:
        load_connection()
    assert "in-cluster" in str(info.value)


def test_static_token_becomes_a_bearer_header(tmp_path: Path) -> None:
    conn = load_connection(str(_kubeconfig(tmp_path / "kc", "http://127.0.0.1:1", {"token": "abc"})))
    assert conn.credentials.header == "Bearer abc"


def test_insecure_https_turns_verification_off(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kc", "https://127.0.0.1:6443", {}, {"insecure-skip-tls-verify": True})
    conn = load_connection(str(path))
    assert isinstance(conn.ssl, ssl.SSLContext)
    assert conn.ssl.verify_mode == ssl.CERT_NONE
    assert not conn.ssl.check_hostname


def test_bad_ca_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "ca.crt"
    bad.write_text("not a certificate")
    path = _kubeconfig(tmp_path / "kc", "https://127.0.0.1:6443", {}, {"certificate-authority": str(bad)})
    with pytest.raises(KubeConfigError, match=r"ca\.crt"):
        load_connection(str(path))


def test_in_cluster_service_account(tmp_path: Path) -> None:
    import certifi  # a dependency of the kubernetes package: a real CA bundle to load

    token = tmp_path / "token"
    token.write_text("sa-token")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    conn = incluster_connection(token_path=str(token), ca_path=certifi.where(), environ=env)
    assert conn.server == "https://10.0.0.1:443"
    assert conn.credentials.header == "bearer sa-token"
    assert conn.credentials.refreshable
    assert isinstance(conn.ssl, ssl.SSLContext)
    with pytest.raises(KubeConfigError, match="in-cluster"):
        incluster_connection(token_path=str(tmp_path / "none"), ca_path=certifi.where(), environ=env)


def test_exec_plugin_token_is_reloaded_after_401(sim: SimCluster, tmp_path: Path, io: IOThread) -> None:
    user, runs = _exec_plugin(tmp_path)
    conn = load_connection(str(_kubeconfig(tmp_path / "kc", sim.url, user)))
    assert conn.credentials.header == "Bearer tok-1"
    client: ApiClient = io.client(conn)
    assert io.run(client.get("/api/v1/namespaces/default"))["metadata"]["name"] == "default"

    sim.faults.configure(
        FaultConfig(errors=(ErrorRule(verb="get", resource="namespaces", code=401, rate=1.0),))
    )
    with pytest.raises(ApiError) as info:
        io.run(client.get("/api/v1/namespaces/default"))
    assert info.value.status == 401
    # the 401 made the client load the configuration again: the plugin ran a second time
    assert conn.credentials.header == "Bearer tok-2"
    assert runs.read_text() == "2"
    sim.faults.configure(FaultConfig())
    assert io.run(client.get("/api/v1/namespaces/default"))["metadata"]["name"] == "default"
