"""When ``ksched run`` posts bindings from a child process (``--bind-worker``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ksched.kube.bind_worker import BindWorker
from ksched.runner import RunOptions, _bind_worker


def _client(max_connections: int = 100) -> Any:
    return SimpleNamespace(
        limiter=SimpleNamespace(qps=50.0, burst=100),
        settings=SimpleNamespace(max_connections=max_connections),
        user_agent="ksched/test (host_1234)",
    )


@pytest.mark.parametrize(("cpus", "wanted"), [({0}, False), ({0, 1}, True), ({0, 1, 2, 3}, True)])
def test_auto_uses_a_worker_only_with_a_second_cpu(
    monkeypatch: pytest.MonkeyPatch, cpus: set[int], wanted: bool
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: cpus)
    worker = _bind_worker(RunOptions(), _client(), None)
    assert (worker is not None) is wanted


@pytest.mark.parametrize(("choice", "wanted"), [(True, True), (False, False)])
def test_on_and_off_win_over_the_cpu_count(
    monkeypatch: pytest.MonkeyPatch, choice: bool, wanted: bool
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0} if choice else {0, 1})
    worker = _bind_worker(RunOptions(bind_worker=choice), _client(), "/tmp/kc")
    assert (worker is not None) is wanted


def test_the_worker_gets_the_client_budget_and_the_kubeconfig() -> None:
    worker = _bind_worker(RunOptions(bind_worker=True), _client(max_connections=20), "/tmp/kc")
    assert isinstance(worker, BindWorker)
    argv = worker._command
    assert argv[argv.index("--qps") + 1] == "50.0" and argv[argv.index("--burst") + 1] == "100"
    assert argv[argv.index("--max-in-flight") + 1] == "16"
    assert argv[argv.index("--kubeconfig") + 1] == "/tmp/kc"
