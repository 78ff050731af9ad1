"""The bind worker (a child process posting bindings) against the sim over HTTP.

What must hold wherever a binding runs: it lands once, the API's errors come back as the same
exception types, transient faults are retried, and a worker that dies loses no pod (its bindings in
flight fail, so the scheduler requeues them) and is replaced; one that cannot run at all leaves the
scheduler binding in-process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from ksched.errors import Conflict, NotFound, TooManyRequests
from ksched.kube import ApiClient, ApiConnectionError, IOThread
from ksched.kube import writers as w
from ksched.kube.bind_worker import READY, BindWorker, _lines, error_answer, error_from_answer
from ksched.model.pod import pod_from_dict
from ksched.scheduler.binder import ApiOutbox
from ksched.scheduler.inbox import BindDone, Inbox
from ksched.sim import ErrorRule, FaultConfig, LatencyRule, SimCluster


def _uid(sim: SimCluster, name: str) -> str:
    pod = sim.store.get("pods", name, "default")
    assert pod is not None
    return str(pod["metadata"]["uid"])


def _node_of(sim: SimCluster, name: str) -> str | None:
    pod = sim.store.get("pods", name, "default")
    assert pod is not None
    return pod["spec"].get("nodeName")


async def _unused(namespace: str, name: str, uid: str, node: str) -> None:
    raise AssertionError(f"in-process fallback used for {namespace}/{name}")


@pytest.fixture
def worker(io: IOThread, kubeconfig: Path) -> Iterator[BindWorker]:
    bw = BindWorker(_unused, kubeconfig=str(kubeconfig), qps=0.0, burst=1, max_in_flight=32)
    assert io.run(bw.start(), timeout=30)
    try:
        yield bw
    finally:
        io.run(bw.close(), timeout=15)


def _bind_all(io: IOThread, bw: BindWorker, jobs: list[tuple[str, str, str]]) -> list[BaseException | None]:
    async def all_of() -> list[BaseException | None]:
        results = await asyncio.gather(
            *(bw.bind("default", name, uid, node) for name, uid, node in jobs), return_exceptions=True
        )
        return [r if isinstance(r, BaseException) else None for r in results]

    return io.run(all_of(), timeout=60)


def test_bindings_through_the_worker_land_once_from_another_process(
    sim: SimCluster, io: IOThread, worker: BindWorker
) -> None:
    sim.add_pods(200)
    jobs = [(f"pod-{i}", _uid(sim, f"pod-{i}"), f"node-{i % 3}") for i in range(200)]
    assert _bind_all(io, worker, jobs) == [None] * 200
    assert worker.pid is not None and worker.pid != os.getpid()
    assert all(_node_of(sim, name) == node for name, _, node in jobs)
    assert sim.audit.double_bindings() == []


def test_api_errors_come_back_as_the_same_exception_types(
    sim: SimCluster, io: IOThread, client: ApiClient, worker: BindWorker
) -> None:
    sim.add_pods(2)
    io.run(w.bind(client, "default", "pod-0", _uid(sim, "pod-0"), "node-1"))
    with pytest.raises(Conflict, match="already assigned"):
        io.run(worker.bind("default", "pod-0", _uid(sim, "pod-0"), "node-2"))
    # the same binding again: the writer's read-back turns the 409 into success, in the worker too
    io.run(worker.bind("default", "pod-0", _uid(sim, "pod-0"), "node-1"))
    with pytest.raises(NotFound):
        io.run(worker.bind("default", "no-such-pod", "", "node-1"))
    assert _node_of(sim, "pod-1") is None


def test_a_binding_answered_503_is_retried_in_the_worker(
    sim: SimCluster, io: IOThread, worker: BindWorker
) -> None:
    sim.add_pods(1)
    rule = ErrorRule(verb="create", resource="pods/binding", code=503, rate=1.0, retry_after_s=0)
    sim.faults.configure(FaultConfig(errors=(rule,)))
    timer = threading.Timer(0.3, sim.faults.configure, args=(FaultConfig(),))
    timer.start()
    try:
        io.run(worker.bind("default", "pod-0", _uid(sim, "pod-0"), "node-2"), timeout=30)
    finally:
        timer.join()
    assert _node_of(sim, "pod-0") == "node-2"
    assert sim.audit.double_bindings() == []


def test_a_worker_killed_mid_flight_fails_its_bindings_and_is_replaced(
    sim: SimCluster, io: IOThread, worker: BindWorker, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add_pods(30)
    jobs = [(f"pod-{i}", _uid(sim, f"pod-{i}"), f"node-{i % 3}") for i in range(30)]
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="create", resource="pods/binding", ms=1500),)))
    first_pid = worker.pid
    assert first_pid is not None
    threading.Timer(0.5, os.kill, args=(first_pid, 9)).start()
    with caplog.at_level(logging.ERROR, logger="ksched.kube.bind_worker"):
        outcomes = _bind_all(io, worker, jobs)
    sim.faults.configure(FaultConfig())
    failed = [job for job, exc in zip(jobs, outcomes, strict=True) if exc is not None]
    assert failed, "the kill came after every binding had answered"
    assert all(
        isinstance(exc, ApiConnectionError) and "BindWorkerExited" in str(exc) for exc in outcomes if exc
    )
    assert "bindings in flight" in caplog.text
    # What the scheduler does next: requeue and bind again, through a new worker.
    assert _bind_all(io, worker, failed) == [None] * len(failed)
    assert worker.pid not in (None, first_pid) and worker.unexpected_exits == 1
    assert all(_node_of(sim, name) == node for name, _, node in jobs)
    assert sim.audit.double_bindings() == []


def test_a_worker_that_cannot_start_leaves_binding_in_process(
    sim: SimCluster, io: IOThread, client: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add_pods(2)
    used: list[str] = []

    async def in_process(namespace: str, name: str, uid: str, node: str) -> None:
        used.append(name)
        await w.bind(client, namespace, name, uid, node)

    bw = BindWorker(
        in_process,
        kubeconfig=None,
        qps=0.0,
        burst=1,
        max_starts=2,
        start_window_s=0.2,
        command=[sys.executable, "-c", "import sys; sys.exit(3)"],
    )
    with caplog.at_level(logging.ERROR, logger="ksched.kube.bind_worker"):
        assert io.run(bw.start(), timeout=30) is False
        for i in range(2):
            io.run(bw.bind("default", f"pod-{i}", _uid(sim, f"pod-{i}"), "node-0"), timeout=30)
    assert bw.gave_up and used == ["pod-0", "pod-1"]
    assert "binding in the scheduler process from now on" in caplog.text
    assert [_node_of(sim, f"pod-{i}") for i in range(2)] == ["node-0", "node-0"]
    io.run(bw.close(), timeout=5)


def test_the_outbox_hands_bindings_to_the_worker(
    sim: SimCluster, io: IOThread, client: ApiClient, worker: BindWorker
) -> None:
    sim.add_pods(50)
    pods = [pod_from_dict(sim.store.get("pods", f"pod-{i}", "default") or {}) for i in range(50)]
    inbox = Inbox()
    outbox = ApiOutbox(io, client, inbox, bind_worker=worker)
    for i, pod in enumerate(pods):
        outbox.bind(pod, f"node-{i % 3}")
    done: list[BindDone] = []
    while len(done) < 50:
        item = inbox.wait(20.0)
        assert item is not None, f"{len(done)} of 50 bind outcomes arrived"
        done.append(item)
    assert all(d.error is None for d in done)
    assert client.stats["requests"] == 0  # none went through the scheduler's own client
    assert sim.audit.double_bindings() == []


def test_the_child_skips_malformed_requests_and_answers_the_rest(sim: SimCluster, kubeconfig: Path) -> None:
    """The wire as the child sees it: a bad line is logged and skipped; end of input ends it cleanly."""
    sim.add_pods(1)
    good = orjson.dumps([7, "default", "pod-0", _uid(sim, "pod-0"), "node-2"])
    cmd = [sys.executable, "-m", "ksched.kube.bind_worker", "--kubeconfig", str(kubeconfig)]
    proc = subprocess.run(
        [*cmd, "--qps", "0", "--burst", "1"],
        input=b'not json\n["too", "short"]\n["1", "a", "b", "c", "d"]\n' + good + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.splitlines()
    assert [line for line in lines if not line.startswith(b'["metrics"')] == [READY.strip(), b"[7]"]
    # the request metrics of the binding travel ahead of its answer
    metrics = orjson.loads(lines[1])
    assert metrics[0] == "metrics" and [r[:2] for r in metrics[1]["requests"]] == [["201", "POST"]]
    assert proc.stderr.decode().count("ignoring malformed request") == 3
    assert _node_of(sim, "pod-0") == "node-2"


# -- the wire, without processes ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "exc",
    [
        Conflict(409, "Conflict", 'pod "a" is already assigned to node "n"'),
        NotFound(404, "NotFound", 'pods "a" not found'),
        TooManyRequests(429, "TooManyRequests", "slow down", 1.0),
        ApiConnectionError("Timeout", "POST /api/v1/...: TimeoutError()"),
    ],
)
def test_errors_survive_the_wire(exc: Exception) -> None:
    back = error_from_answer(orjson.loads(orjson.dumps(error_answer(5, exc))))
    assert type(back) is type(exc) and str(back) == str(exc)


def test_an_unexpected_exception_in_the_child_reads_as_a_connection_error() -> None:
    back = error_from_answer(error_answer(5, RuntimeError("boom")))
    assert isinstance(back, ApiConnectionError) and back.reason == "RuntimeError" and "boom" in str(back)


def test_lines_are_taken_whole_across_reads() -> None:
    buffer = bytearray()
    assert _lines(buffer, b"[1]\n[2") == [b"[1]"]
    assert _lines(buffer, b"]") == []
    assert _lines(buffer, b"\n[3]\n") == [b"[2]", b"[3]"]
    assert buffer == b""


def test_a_worker_that_stops_answering_is_killed_and_its_bindings_fail(
    sim: SimCluster, io: IOThread, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add_pods(1)
    mute = "import sys; print('[\"ready\"]', flush=True); sys.stdin.read()"
    bw = BindWorker(
        _unused, kubeconfig=None, qps=0.0, burst=1, answer_timeout_s=0.4, command=[sys.executable, "-c", mute]
    )
    with caplog.at_level(logging.ERROR, logger="ksched.kube.bind_worker"):
        assert io.run(bw.start(), timeout=30)
        with pytest.raises(ApiConnectionError, match="BindWorkerExited"):
            io.run(bw.bind("default", "pod-0", _uid(sim, "pod-0"), "node-0"), timeout=30)
    assert "has not answered a binding in 0s; killing it" in caplog.text
    io.run(bw.close(), timeout=5)


def test_the_child_with_a_bad_kubeconfig_says_so_and_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    cmd = [
        sys.executable,
        "-m",
        "ksched.kube.bind_worker",
        "--kubeconfig",
        str(missing),
        "--qps",
        "0",
        "--burst",
        "1",
    ]
    proc = subprocess.run(cmd, input=b"", capture_output=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert str(missing) in proc.stderr.decode() and "Traceback" not in proc.stderr.decode()


def test_sigterm_makes_the_child_answer_what_it_holds_then_exit(sim: SimCluster, kubeconfig: Path) -> None:
    sim.add_pods(1)
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="create", resource="pods/binding", ms=500),)))
    cmd = [
        sys.executable,
        "-m",
        "ksched.kube.bind_worker",
        "--kubeconfig",
        str(kubeconfig),
        "--qps",
        "0",
        "--burst",
        "1",
    ]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            assert proc.stdout.readline() == READY
            proc.stdin.write(orjson.dumps([1, "default", "pod-0", _uid(sim, "pod-0"), "node-1"]) + b"\n")
            proc.stdin.flush()
            time.sleep(0.2)  # the binding is in flight (500 ms of latency)
            proc.send_signal(signal.SIGTERM)
            assert proc.stdout.readline().startswith(b'["metrics",')  # its requests, then its answer
            assert proc.stdout.readline() == b"[1]\n"
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
    assert _node_of(sim, "pod-0") == "node-1"


def test_a_start_cut_short_by_shutdown_lets_the_child_exit_at_once(kubeconfig: Path) -> None:
    """Stopping the I/O loop while the child is still starting (its ``ready`` not read yet) closes
    the child's input, so the closer reaps it at once instead of waiting out its timeout."""
    bw = BindWorker(_unused, kubeconfig=str(kubeconfig), qps=0.0, burst=1, max_in_flight=4)
    io = IOThread().start()
    io.submit(bw.start())
    io.add_closer(bw.close)
    deadline = time.monotonic() + 10
    while bw.pid is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert bw.pid is not None
    t0 = time.monotonic()
    io.stop()
    assert time.monotonic() - t0 < 3.0
    assert bw.pid is None
