"""Reading the authentication ConfigMap and choosing the delegated clients, as upstream's
DelegatingAuthenticationOptions (inClusterRequestHeader, deserializeStrings, getClient)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from ksched.errors import InputError
from ksched.server.authn import RequestHeaderConfig
from ksched.server.delegation import AuthSources, delegated_connection, request_header_from_configmap
from ksched.server.options import AuthenticationOptions
from tests.unit.server.pki import CA


def test_request_header_settings_from_the_configmap() -> None:
    data = {
        "requestheader-client-ca-file": "PEM",
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-uid-headers": '["X-Remote-Uid"]',
    }
    assert request_header_from_configmap(data) == RequestHeaderConfig(
        client_ca=b"PEM",
        allowed_names=("front-proxy-client",),
        username_headers=("X-Remote-User",),
        uid_headers=("X-Remote-Uid",),
        group_headers=("X-Remote-Group",),
        extra_prefixes=("X-Remote-Extra-",),
    )
    assert request_header_from_configmap({"requestheader-allowed-names": "[]"}) is None, "no CA, no settings"
    with pytest.raises(InputError, match="requestheader-allowed-names is not a JSON list"):
        request_header_from_configmap(
            {"requestheader-client-ca-file": "PEM", "requestheader-allowed-names": "x"}
        )
    with pytest.raises(InputError, match="must be a list of strings"):
        request_header_from_configmap(
            {"requestheader-client-ca-file": "PEM", "requestheader-group-headers": "[1]"}
        )


def test_no_kubeconfig_outside_a_cluster_means_no_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert delegated_connection("", "authentication") is None
    with pytest.raises(InputError, match="failed to get delegated authentication kubeconfig"):
        delegated_connection("/nonexistent/kubeconfig", "authentication")


def test_flags_win_and_missing_lookups_warn(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ca = CA("flag-ca")
    path = tmp_path / "ca.crt"
    path.write_bytes(ca.pem)
    sources = AuthSources(AuthenticationOptions(client_ca_file=str(path)), client=None)
    with caplog.at_level(logging.WARNING):
        asyncio.run(sources.initial())
    assert sources.client_ca == ca.pem and sources.request_header is None
    assert [r.getMessage() for r in caplog.records] == [
        "No authentication-kubeconfig provided in order to lookup requestheader-client-ca-file in "
        "configmap/extension-apiserver-authentication in kube-system, so request-header client "
        "certificate authentication won't work."
    ]
    with pytest.raises(InputError, match="--client-ca-file=/nope: unable to load client CA file"):
        asyncio.run(AuthSources(AuthenticationOptions(client_ca_file="/nope"), client=None).initial())
    skipped = AuthSources(AuthenticationOptions(skip_lookup=True), client=None)
    caplog.clear()
    asyncio.run(skipped.initial())
    assert not caplog.records, "--authentication-skip-lookup looks nothing up and warns of nothing"
