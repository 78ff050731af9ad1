"""The benchmark's two child processes, and what ``/proc`` says about them.

The embedded cluster runs as ``ksched sim serve`` (its own interpreter and GIL, like a real API
server), the scheduler as ``ksched run`` started by :func:`ksched.simrun.start_scheduler`, exactly as
``ksched sim`` starts it. CPU seconds and peak RSS are read from ``/proc/<pid>`` (Linux), so they
cover the whole process, every thread included; elsewhere they are reported as missing.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ksched.bench.errors import BenchError
from ksched.simrun import pinned_command, stop_process

SIM_START_TIMEOUT_S = 60.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True, slots=True)
class ProcSample:
    cpu_s: float
    """User + system CPU seconds since the process started."""
    peak_rss_bytes: int
    """VmHWM: the high-water mark of resident memory."""


def sample(pid: int) -> ProcSample | None:
    """CPU and peak RSS of ``pid`` from /proc, or None when unavailable (not Linux, process gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15 of stat)
    hwm = 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
    return ProcSample(cpu, hwm)


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (the scheduler's bind worker), from /proc; [] elsewhere."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found.extend(int(c) for c in (task / "children").read_text().split())
    return sorted(set(found))


@dataclass
class SimProcess:
    """``ksched sim serve`` in a child process; ``url`` and ``kubeconfig`` once started."""

    proc: subprocess.Popen[bytes]
    url: str
    kubeconfig: Path
    log_path: Path

    def stop(self) -> None:
        """SIGTERM (the server stops cleanly), then close our end of its stdout."""
        stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def sim_command(
    workdir: Path,
    *,
    history_window: int,
    verbosity: int = 0,
    start_pods: bool = False,
    storage_controllers: bool = False,
) -> list[str]:
    """``ksched sim serve`` as the bench runs it: without ``start_pods``, bound pods stay Pending (as
    in upstream's scheduler_perf, which has no kubelets); graceful deletes complete either way.
    Without ``storage_controllers`` no PV controller or provisioner runs (scheduler_perf runs none:
    its claims are created bound); a workload whose claims must be provisioned asks for them."""
    cmd = [sys.executable, "-m", "ksched", "-v", str(verbosity), "sim", "serve", "--port", "0"]
    cmd += ["--kubeconfig-out", str(workdir / "kubeconfig"), "--history-window", str(history_window)]
    if not storage_controllers:
        cmd.append("--no-storage-controllers")
    if not start_pods:
        cmd.append("--no-start-pods")
    return cmd


def start_sim(
    workdir: Path,
    *,
    history_window: int,
    verbosity: int = 0,
    start_pods: bool = False,
    storage_controllers: bool = False,
    cpus: frozenset[int] | None = None,
) -> SimProcess:
    """Start the embedded cluster with no nodes (the driver adds them) and wait for its URL;
    ``cpus``, when given, are the only CPUs it may run on."""
    kubeconfig = workdir / "kubeconfig"
    log_path = workdir / "sim.log"
    cmd = sim_command(
        workdir,
        history_window=history_window,
        verbosity=verbosity,
        start_pods=start_pods,
        storage_controllers=storage_controllers,
    )
    cmd = pinned_command(cmd, cpus)
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log_file, env=dict(os.environ))
    assert proc.stdout is not None
    deadline = time.monotonic() + SIM_START_TIMEOUT_S
    url = ""
    buf = b""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            proc.stdout.close()
            raise BenchError(f"the embedded cluster exited with status {proc.returncode}; see {log_path}")
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        buf += chunk
        for line in buf.decode(errors="replace").splitlines():
            if "serving on " in line:
                url = line.split("serving on ", 1)[1].strip()
            if url and "kubeconfig written" in line:
                return SimProcess(proc, url, kubeconfig, log_path)
    with contextlib.suppress(Exception):
        proc.kill()
        proc.wait()
    proc.stdout.close()
    raise BenchError(f"the embedded cluster did not start within {SIM_START_TIMEOUT_S:.0f}s; see {log_path}")
