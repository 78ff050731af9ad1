"""``ksched sim``: the main job on a laptop — an embedded cluster, the real scheduler, a summary.

It starts the embedded API server (``ksched.sim``) in this process with ``--nodes`` simulated
nodes, starts ``ksched run`` as a *separate process* talking to it over HTTP (the production
client path, and its own GIL), waits until the scheduler's caches are synced, creates ``--pods``
pending pods at once, shows progress, and prints what happened: pods per second, time-to-bind
percentiles, and how many pods could not be placed. The binding audit log of the server is the
source of truth (it also proves no pod was bound twice).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from ksched.errors import KschedError
from ksched.sim import SimCluster, SimConfig, StorageControllers
from ksched.sim.workloads import node_template, pod_template

READY_TIMEOUT_S = 60.0
STALL_S = 10.0
"""Stop waiting when no binding happened for this long (the rest cannot be placed)."""

WORKLOADS = {
    "plain": lambda: pod_template(cpu="100m", memory="500Mi"),
}
"""Pod shapes ``--workload`` can name; the benchmark suite adds upstream's scheduler_perf cases."""


class SimRunError(KschedError):
    """The embedded run could not be carried out (the scheduler did not start, or died)."""


@dataclass(frozen=True, slots=True)
class Summary:
    nodes: int
    pods: int
    bound: int
    unscheduled: int
    double_bindings: int
    seconds: float
    pods_per_second: float
    bind_latency_p50_s: float
    bind_latency_p90_s: float
    bind_latency_p99_s: float

    def text(self) -> str:
        return (
            f"ksched sim: {self.bound}/{self.pods} pods bound on {self.nodes} nodes in {self.seconds:.2f}s "
            f"({self.pods_per_second:,.0f} pods/s)\n"
            f"  time to bind: p50 {self.bind_latency_p50_s * 1000:.0f} ms, "
            f"p90 {self.bind_latency_p90_s * 1000:.0f} ms, p99 {self.bind_latency_p99_s * 1000:.0f} ms\n"
            f"  not scheduled: {self.unscheduled}; bound twice: {self.double_bindings}"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def scheduler_config(path: Path) -> Path:
    """Upstream defaults, except a client rate limit that does not cap bindings at 50/s, and
    /debug/profile on (the process serves loopback only; ``ksched bench --profile`` reads it)."""
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 100000, "burst": 100000},
        "enableProfiling": True,
        "leaderElection": {"leaderElect": False},
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _wait_ready(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    url = f"http://127.0.0.1:{port}/readyz"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise _exited(proc, log)
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as resp:
            if resp.status == 200:
                return
        time.sleep(0.1)
    raise SimRunError(f"the scheduler did not become ready within {READY_TIMEOUT_S:.0f}s; see {log}")


def _progress(bound: int, total: int, elapsed: float, tty: bool) -> None:
    rate = bound / elapsed if elapsed > 0 else 0.0
    if tty:
        width = 30
        filled = int(width * bound / max(total, 1))
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r[{bar}] {bound}/{total} bound, {rate:,.0f} pods/s ")
        sys.stderr.flush()


def _exited(proc: subprocess.Popen[bytes], log: Path) -> SimRunError:
    """The error for a scheduler process that stopped, with its log's last line: that line says
    why ``ksched run`` stopped (a config error, an unknown plugin, ...)."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    why = f": {lines[-1][:300]}" if lines else ""
    return SimRunError(f"the scheduler exited with status {proc.returncode}{why}; see {log}")


def run_sim(
    *,
    nodes: int,
    pods: int,
    workload: str = "plain",
    timeout_s: float = 600.0,
    config_path: str | None = None,
    verbosity: int = 0,
    keep_dir: str | None = None,
    plugins: tuple[str, ...] = (),
    storage_controllers: StorageControllers | None = None,
) -> Summary:
    """Run the embedded cluster and a scheduler process; return what happened.

    ``plugins`` (``module:factory``) are passed to ``ksched run --plugin``, for a ``config_path``
    that names out-of-tree plugins. ``storage_controllers`` says which storage controller stand-ins
    run beside the cluster (default: all; their log is ``storage-controllers.log`` in the work dir).
    """
    which = storage_controllers if storage_controllers is not None else StorageControllers()
    if workload not in WORKLOADS:
        raise SimRunError(f"unknown workload {workload!r} (known: {', '.join(sorted(WORKLOADS))})")
    workdir = Path(keep_dir or tempfile.mkdtemp(prefix="ksched-sim-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sim = SimCluster(SimConfig(history_window=max(10_000, 4 * pods)))
    sim.start()
    proc: subprocess.Popen[bytes] | None = None
    try:
        sim.add_nodes(nodes, node_template(), zones=10)
        if which.any:
            sim.start_storage_controllers(
                pv_controller=which.pv_controller,
                provisioner=which.provisioner,
                ephemeral=which.ephemeral,
                log_file=workdir / "storage-controllers.log",
            )
        kubeconfig = sim.write_kubeconfig(workdir / "kubeconfig")
        proc, _, log_path = start_scheduler(
            workdir, kubeconfig, config_path=config_path, verbosity=verbosity, plugins=plugins
        )
        start = sim.audit.clock.now()
        sim.add_pods(pods, WORKLOADS[workload](), namespace="default")
        _wait_bound(sim, proc, pods, start, timeout_s, log_path)
        return _summary(sim, nodes, pods, start)
    finally:
        if proc is not None:
            stop_process(proc)
        sim.stop()


def _wait_bound(
    sim: SimCluster, proc: subprocess.Popen[bytes], pods: int, start: float, timeout_s: float, log_path: Path
) -> None:
    """Until every pod is bound, binding stalls for :data:`STALL_S`, or ``timeout_s`` passes."""
    clock = sim.audit.clock
    tty = sys.stderr.isatty()
    last_count, last_change = 0, time.monotonic()
    deadline = time.monotonic() + timeout_s
    while True:
        bound = sum(1 for r in sim.audit.records() if r.result == "bound")
        now = time.monotonic()
        _progress(bound, pods, clock.now() - start, tty)
        if bound != last_count:
            last_count, last_change = bound, now
        if bound >= pods or now - last_change > STALL_S or now > deadline:
            break
        if proc.poll() is not None:
            raise _exited(proc, log_path)
        time.sleep(0.2)
    if tty:
        sys.stderr.write("\n")


def _summary(sim: SimCluster, nodes: int, pods: int, start: float) -> Summary:
    records = [r for r in sim.audit.records() if r.result == "bound"]
    times = sorted(r.timestamp - start for r in records)
    elapsed = times[-1] if times else sim.audit.clock.now() - start
    return Summary(
        nodes=nodes,
        pods=pods,
        bound=len(records),
        unscheduled=pods - len({r.uid for r in records}),
        double_bindings=len(sim.audit.double_bindings()),
        seconds=elapsed,
        pods_per_second=len(records) / elapsed if elapsed > 0 else 0.0,
        bind_latency_p50_s=_percentile(times, 0.50),
        bind_latency_p90_s=_percentile(times, 0.90),
        bind_latency_p99_s=_percentile(times, 0.99),
    )


def pinned_command(cmd: list[str], cpus: frozenset[int] | None) -> list[str]:
    """``cmd`` run on ``cpus`` only, or ``cmd`` itself when ``cpus`` is empty or None.

    A two-line Python trampoline sets the CPU affinity and ``exec``s the command, which keeps the
    mask (Linux ``sched_setaffinity``); every thread the command starts inherits it. Used by
    ``ksched bench --pin``; ``cmd[0]`` must be an absolute path (``sys.executable``).
    """
    if not cpus:
        return cmd
    mask = ", ".join(str(c) for c in sorted(cpus))
    code = f"import os, sys; os.sched_setaffinity(0, {{{mask}}}); os.execv(sys.argv[1], sys.argv[1:])"
    return [sys.executable, "-c", code, *cmd]


def start_scheduler(
    workdir: Path,
    kubeconfig: Path,
    *,
    config_path: str | None = None,
    verbosity: int = 0,
    python_args: tuple[str, ...] = (),
    cpus: frozenset[int] | None = None,
    plugins: tuple[str, ...] = (),
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """Start ``ksched run`` as a separate process against ``kubeconfig`` and wait until it is ready.

    The process ``run_sim`` starts, for other drivers (``ksched bench``); returns the process, the port
    of its /metrics and /debug/profile, and its log file. ``python_args`` go before ``-m ksched``;
    ``cpus``, when given, are the only CPUs it may run on (:func:`pinned_command`); ``plugins``
    (``module:factory``) go to ``--plugin``.
    """
    config = Path(config_path) if config_path else scheduler_config(workdir / "config.yaml")
    port = _free_port()
    log_path = workdir / "scheduler.log"
    cmd = [sys.executable, *python_args, "-m", "ksched", "run", f"--v={verbosity}"]
    cmd += ["--config", str(config), "--leader-elect=false"]
    # kube-scheduler's flags: no HTTPS port; ksched's plain-HTTP port for /readyz and /metrics.
    cmd += ["--secure-port=0", f"--insecure-port={port}"]
    for plugin in plugins:
        cmd += ["--plugin", plugin]
    cmd = pinned_command(cmd, cpus)
    with open(log_path, "wb") as log_file:
        # With --config, kube-scheduler ignores --kubeconfig: the kubeconfig comes through $KUBECONFIG.
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_ready(port, proc, log_path)
    except BaseException:
        stop_process(proc)
        raise
    return proc, port, log_path


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """SIGTERM, wait, then SIGKILL: how every child of the sim and bench commands is stopped."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def summary_json(summary: Summary) -> str:
    return json.dumps(asdict(summary), indent=2)
