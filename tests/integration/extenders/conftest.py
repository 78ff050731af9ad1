"""Fixtures for the extender tests: an empty embedded cluster, ``ksched run`` processes, and
extender servers (``examples/extender/server.py``) as separate processes on loopback."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scheduler"))

from sched_harness import KschedProcess, wait_until

from ksched.sim import SimCluster, SimConfig

ROOT = Path(__file__).resolve().parents[3]
SERVER = ROOT / "examples" / "extender" / "server.py"
SIM = SimConfig(
    bookmark_interval_s=0.5, running_delay_s=0.0, grace_scale=0.0, slow_watcher_timeout_s=2.0, seed=1
)


@pytest.fixture
def sim() -> Iterator[SimCluster]:
    cluster = SimCluster(SIM)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


class ExtenderServer:
    """``examples/extender/server.py`` in its own process; :attr:`url` once it listens."""

    def __init__(self, tmp: Path, args: list[str], port: int = 0) -> None:
        self.log_path = tmp / f"extender-{len(list(tmp.glob('extender-*.log')))}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port), *args], stdout=self._log, stderr=self._log
        )

        def listening() -> str | None:
            assert self.proc.poll() is None, f"extender exited:\n{self.log_path.read_text()}"
            m = re.search(r"listening on (https?://\S+)", self.log_path.read_text())
            return m.group(1) if m else None

        self.url = wait_until(listening, timeout=20, what="the extender to listen")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


@pytest.fixture
def start_extender(tmp_path: Path) -> Iterator[Callable[..., ExtenderServer]]:
    """``start_extender(*args, port=0)``: an extender server, killed after the test."""
    servers: list[ExtenderServer] = []

    def start(*args: str, port: int = 0) -> ExtenderServer:
        server = ExtenderServer(tmp_path, list(args), port)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def start_ksched(tmp_path: Path, kubeconfig: Path) -> Iterator[Callable[[str], KschedProcess]]:
    """``start_ksched(config_text)``: ``ksched run`` with that configuration, killed after the test."""
    procs: list[KschedProcess] = []

    def start(config: str) -> KschedProcess:
        path = tmp_path / f"ksched-{len(procs)}.yaml"
        path.write_text(config)
        proc = KschedProcess(f"ksched-{len(procs)}", kubeconfig, path, tmp_path, leader_elect=False)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
