"""``--master`` replaces the kubeconfig's server, as clientcmd.BuildConfigFromFlags does."""

from __future__ import annotations

from pathlib import Path

import yaml

from ksched.runner import RunOptions, _bind_worker, _connection

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {"name": "c", "cluster": {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True}}
    ],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}


def test_master_overrides_the_server(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump(KUBECONFIG))
    assert _connection(str(path), "").server == "https://10.0.0.1:6443"
    plain = _connection(str(path), "http://127.0.0.1:8080/")
    assert (plain.server, plain.ssl) == ("http://127.0.0.1:8080", None)
    secure = _connection(str(path), "https://api.example:6443")
    assert secure.server == "https://api.example:6443" and secure.ssl is not None


def test_master_turns_the_bind_worker_off() -> None:
    assert _bind_worker(RunOptions(master="http://x", bind_worker=True), None, None) is None  # type: ignore[arg-type]
