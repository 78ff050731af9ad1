"""Embedded-cluster benchmarks (run: ``pytest benches/test_sim.py``); figures go to extra_info.

Targets on a 2-core machine: 5,000 nodes start in < 2 s and list over HTTP in < 1 s; one watcher gets
10,000 pod events in < 1 s; a concurrent aiohttp client posts >= 3,000 bindings/s. The server runs
in a subprocess (``ksched.sim.cli serve``) for the HTTP figures, so client and server each get a core,
as they would in real use; the in-thread variant shares one interpreter (and its GIL) with the client.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from ksched.sim import SimCluster, SimConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def served() -> Iterator[str]:
    """A sim server process with 5,000 nodes in 3 zones; yields its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from ksched.sim.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--nodes", "5000", "--zones", "3", "--history-window", "50000"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving on" in line, line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_start_5000_nodes(benchmark: pytest.FixtureRequest) -> None:
    def start() -> SimCluster:
        c = SimCluster(SimConfig())
        c.add_nodes(5000, zones=3)
        c.start()
        return c

    clusters: list[SimCluster] = []
    benchmark.pedantic(lambda: clusters.append(start()), rounds=3, iterations=1)
    for c in clusters:
        c.stop()


def test_list_5000_nodes_over_http(benchmark: pytest.FixtureRequest, served: str) -> None:
    async def list_once() -> int:
        async with aiohttp.ClientSession() as s, s.get(f"{served}/api/v1/nodes") as r:
            body = await r.read()
            return len(json.loads(body)["items"])

    n = benchmark.pedantic(lambda: asyncio.run(list_once()), rounds=5, iterations=1)
    assert n == 5000


async def _watch_events(url: str, count: int) -> float:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/admin/stats") as r:
            rv = (await r.json())["resourceVersion"]
        async with s.get(
            f"{url}/api/v1/pods?watch=true&resourceVersion={rv}", timeout=aiohttp.ClientTimeout(total=60)
        ) as w:
            t0 = time.perf_counter()
            async with s.post(
                f"{url}/admin/pods", json={"count": count, "namespace": "default", "name_prefix": f"w{rv}-"}
            ) as r:
                assert r.status == 201
            seen = 0
            async for line in w.content:
                json.loads(line)
                seen += 1
                if seen == count:
                    break
            return time.perf_counter() - t0


def test_watch_10000_pod_events(benchmark: pytest.FixtureRequest, served: str) -> None:
    """Time from the bulk create request until the watcher has parsed all 10,000 ADDED events."""
    elapsed = benchmark.pedantic(lambda: asyncio.run(_watch_events(served, 10_000)), rounds=3, iterations=1)
    benchmark.extra_info["events_per_s"] = round(10_000 / elapsed)


async def _bind_all(url: str, count: int, in_flight: int) -> float:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight)) as s:
        async with s.get(f"{url}/admin/stats") as r:
            prefix = f"b{(await r.json())['resourceVersion']}-"
        async with s.post(
            f"{url}/admin/pods", json={"count": count, "namespace": "default", "name_prefix": prefix}
        ) as r:
            assert r.status == 201
        sem = asyncio.Semaphore(in_flight)

        async def bind(i: int) -> int:
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": f"{prefix}{i}"},
                "target": {"kind": "Node", "name": f"node-{i % 5000}"},
            }
            async with (
                sem,
                s.post(f"{url}/api/v1/namespaces/default/pods/{prefix}{i}/binding", json=body) as r,
            ):
                await r.read()
                return r.status

        t0 = time.perf_counter()
        codes = await asyncio.gather(*(bind(i) for i in range(count)))
        elapsed = time.perf_counter() - t0
        assert set(codes) == {201}
        return elapsed


def test_bindings_per_second(benchmark: pytest.FixtureRequest, served: str) -> None:
    n = 10_000
    elapsed = benchmark.pedantic(lambda: asyncio.run(_bind_all(served, n, 64)), rounds=3, iterations=1)
    benchmark.extra_info["bindings_per_s"] = round(n / elapsed)


def test_bindings_per_second_in_thread(benchmark: pytest.FixtureRequest) -> None:
    """Same client, server in a thread of this process (shares the GIL with the client)."""
    with SimCluster(SimConfig(kubelet=False)) as c:
        c.add_nodes(5000, zones=3)
        n = 5_000
        elapsed = benchmark.pedantic(lambda: asyncio.run(_bind_all(c.url, n, 64)), rounds=2, iterations=1)
        benchmark.extra_info["bindings_per_s"] = round(n / elapsed)
