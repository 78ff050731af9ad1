"""Start-up: from ``ksched run``'s process start to its first binding, on a cluster already full.

The embedded cluster gets the workload's nodes (``SchedulingBasic``: 5,000) and its measured pods
(10,000), all pending, before the scheduler starts; the figure is the time from just before the
scheduler's process is spawned to the first binding in the cluster's audit log (whose timestamps
are the cluster's wall clock, the same clock as this driver's). What it covers is what an operator
waits for after a restart: interpreter start and imports, configuration, the informers' initial
lists of nodes and pods, the first cycle and the first binding's round trip.

    python -m benches.startup [--workload SchedulingBasic] [--nodes N] [--pods N] [--repeat 3]

Prints one line per run and the median; run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from ksched.bench import workload as workloads
from ksched.bench.cluster_client import ClusterClient
from ksched.bench.procs import start_sim
from ksched.simrun import scheduler_config, stop_process

POLL_S = 0.005
TIMEOUT_S = 120.0


async def _fill(url: str, wl: workloads.Workload, pods: int) -> None:
    """The workload's nodes, and ``pods`` pending copies of its first measured pod."""
    async with aiohttp.ClientSession() as session:
        cluster = ClusterClient(session, url)
        for group in wl.nodes:
            await cluster.add_nodes(group)
        group = wl.measured_pods[0]
        await cluster.namespace(group.namespace)
        await cluster.add_pods(pods, group.manifest, group.namespace, "startup-")


async def _first_binding(url: str, deadline: float) -> float:
    """The audit timestamp of the first binding, polling the cluster."""
    async with aiohttp.ClientSession() as session:
        cluster = ClusterClient(session, url)
        while time.monotonic() < deadline:
            items = await cluster.new_bindings()
            if items:
                return float(items[0]["timestamp"])
            await asyncio.sleep(POLL_S)
    raise TimeoutError(f"no binding within {TIMEOUT_S:.0f} s")


def one_run(wl: workloads.Workload, pods: int, workdir: Path, verbosity: int = 0) -> float:
    """Seconds from spawning ``ksched run`` to its first binding."""
    sim = start_sim(workdir, history_window=max(10_000, 2 * pods))
    proc = None
    try:
        asyncio.run(_fill(sim.url, wl, pods))
        config = scheduler_config(workdir / "config.yaml")
        cmd = [sys.executable, "-m", "ksched", "run", "--config", str(config), "--leader-elect=false"]
        cmd += ["--secure-port=0", f"--v={verbosity}"]
        env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig)}
        with open(workdir / "scheduler.log", "wb") as log_file:
            started = time.time()
            proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        first = asyncio.run(_first_binding(sim.url, time.monotonic() + TIMEOUT_S))
        return first - started
    finally:
        if proc is not None:
            stop_process(proc)
        sim.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benches.startup", description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="SchedulingBasic")
    p.add_argument("--nodes", type=int, help="scale the workload to N nodes")
    p.add_argument("--pods", type=int, default=10_000, help="pending pods before the start (default 10000)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--keep", type=Path, help="keep each run's logs in KEEP/run-K (default: a temporary directory)"
    )
    p.add_argument("--v", type=int, default=0, help="the scheduler's log verbosity")
    args = p.parse_args(argv)
    wl = workloads.load(args.workload)
    if args.nodes:
        wl = wl.scaled(nodes=args.nodes)
    figures = []
    for k in range(args.repeat):
        if args.keep is not None:
            workdir = args.keep / f"run-{k + 1}"
            workdir.mkdir(parents=True, exist_ok=True)
            seconds = one_run(wl, args.pods, workdir, args.v)
        else:
            with tempfile.TemporaryDirectory(prefix="ksched-startup-") as tmp:
                seconds = one_run(wl, args.pods, Path(tmp), args.v)
        figures.append(seconds)
        nodes = sum(g.count for g in wl.nodes)
        print(f"run {k + 1}: {nodes} nodes, {args.pods} pending pods: first binding after {seconds:.3f} s")
    load = os.getloadavg()[0]
    print(f"median: {statistics.median(figures):.3f} s over {len(figures)} runs (load {load:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
