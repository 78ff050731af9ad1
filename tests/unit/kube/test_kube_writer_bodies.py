"""Request bodies and credentials, without a server."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ksched.errors import ObjectError
from ksched.kube.connection import Credentials
from ksched.kube.events import Invalid, Relisted, Upserted
from ksched.kube.writers import binding_body, event_body, micro_time, pod_reference


def test_binding_body_is_upstreams() -> None:
    assert binding_body("ns", "p", "uid-1", "n1") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }


def test_event_body_follows_client_go_tools_events() -> None:
    now = dt.datetime(2025, 6, 1, 12, 0, 0, 5, tzinfo=dt.UTC)
    body = event_body(
        regarding=pod_reference("ns", "p", "u", "42"),
        reason="FailedScheduling",
        note="0/3 nodes are available: " + "x" * 2000,
        action="Scheduling",
        event_type="Warning",
        now=now,
    )
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert body["metadata"]["namespace"] == "ns"
    name, _, stamp = body["metadata"]["name"].partition(".")
    assert name == "p" and int(stamp, 16) == int(now.timestamp() * 1e6) * 1000
    assert body["eventTime"] == "2025-06-01T12:00:00.000005Z"
    assert body["reportingController"] == "default-scheduler"
    assert body["reportingInstance"].startswith("default-scheduler-")
    assert (body["type"], body["action"], body["reason"]) == ("Warning", "Scheduling", "FailedScheduling")
    assert len(body["note"]) == 1024
    assert body["regarding"]["resourceVersion"] == "42"


def test_micro_time_converts_to_utc() -> None:
    t = dt.datetime(2025, 1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert micro_time(t) == "2025-01-01T00:00:00.000000Z"


class FakeConfig:
    """What Credentials uses of kubernetes.client.Configuration: the hook and the key lookup."""

    def __init__(self, token: str, hook: bool) -> None:
        self.token = token
        self.calls = 0
        self.refresh_api_key_hook = self._hook if hook else None

    def _hook(self, _cfg: Any) -> None:
        self.calls += 1

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> str:
        if self.refresh_api_key_hook is not None:
            self.refresh_api_key_hook(self)
        return f"Bearer {self.token}-{self.calls}"


def test_credentials_refresh_is_due_on_the_injected_clock() -> None:
    now = [0.0]
    cfg = FakeConfig("t", hook=True)
    creds = Credentials(cfg, refresh_interval_s=30.0, clock=lambda: now[0])
    assert creds.header == "Bearer t-1" and creds.refreshable
    assert not creds.due()
    now[0] = 31.0
    assert creds.due()
    assert creds.refresh() == "Bearer t-2"
    assert not creds.due()


def test_credentials_reload_is_rate_limited() -> None:
    now = [100.0]
    loads = []

    def reload() -> FakeConfig:
        loads.append(1)
        return FakeConfig(f"new{len(loads)}", hook=False)

    creds = Credentials(
        FakeConfig("old", hook=False), reload=reload, reload_min_interval_s=5.0, clock=lambda: now[0]
    )
    assert not creds.refreshable and not creds.due()
    assert creds.reload() and creds.header == "Bearer new1-0"
    assert not creds.reload()  # a second 401 right away does not re-run the plugin
    now[0] += 6.0
    assert creds.reload() and creds.header == "Bearer new2-0"


def test_events_are_frozen_values() -> None:
    err = ObjectError("Pod ns/p", "spec.x", "bad")
    inv = Invalid("pods", "ns", "p", "u", err, "n1", "ksched", "MODIFIED")
    assert inv.key == "ns/p"
    assert Invalid("nodes", "", "n", "u", err).key == "n"
    assert Upserted("pods", 1) == Upserted("pods", 1, "ADDED")
    assert Relisted("pods", (1, 2)).invalid == ()
