"""Client CPU per binding, lean path against aiohttp, interleaved: ``python -m benches.client_cpu``.

``ApiClient`` sends its requests by :mod:`ksched.kube.lean_http` unless ``ClientSettings.lean_http``
is off, when aiohttp carries them. This starts ``ksched sim serve`` (one node, pods left Pending) in
its own process, creates the pods through ``/admin/pods``, and then binds them with
:func:`ksched.kube.writers.bind`, a batch per (round, path, shape), the two paths alternating (in
reverse order on odd rounds) so that a machine whose speed drifts weighs on both alike. The figure
is this process's CPU time (``time.process_time``: user and system, every thread) per binding; the
server's CPU is not counted. Shapes: ``seq`` (one binding at a time) and ``conc`` (``--in-flight``
at once, as the bind worker sends them). Prints each batch, then the medians, their ratio and the
load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ksched.kube import ApiClient, ClientSettings, load_connection, writers

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("lean", "aiohttp")


def _start_sim(kubeconfig: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "ksched", "sim", "serve", "--nodes", "1", "--no-start-pods"]
    proc = subprocess.Popen(
        [*cmd, "--kubeconfig-out", str(kubeconfig)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "serving on" not in line:
        proc.kill()
        raise SystemExit(f"sim did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def _create_pods(server: str, count: int) -> list[tuple[str, str]]:
    """``count`` pending pods; their (name, uid)."""
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": [container]}}
    body = {"count": count, "namespace": "default", "prefix": "p-", "manifest": manifest}
    req = urllib.request.Request(
        server + "/admin/pods",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req).read()
    with urllib.request.urlopen(server + "/api/v1/namespaces/default/pods") as resp:
        items = json.loads(resp.read())["items"]
    return [(p["metadata"]["name"], p["metadata"]["uid"]) for p in items]


async def _batch(client: ApiClient, pods: list[tuple[str, str]], node: str, in_flight: int) -> float:
    """CPU seconds per binding for ``pods``, ``in_flight`` at once (1: one after another)."""
    gate = asyncio.Semaphore(in_flight)

    async def one(name: str, uid: str) -> None:
        async with gate:
            await writers.bind(client, "default", name, uid, node)

    start = time.process_time()
    if in_flight == 1:
        for name, uid in pods:
            await writers.bind(client, "default", name, uid, node)
    else:
        await asyncio.gather(*(one(name, uid) for name, uid in pods))
    return (time.process_time() - start) / len(pods)


async def _run(
    kubeconfig: Path, pods: list[tuple[str, str]], node: str, args: argparse.Namespace
) -> dict[str, Any]:
    conn = load_connection(str(kubeconfig))
    clients = {
        path: ApiClient(conn, settings=ClientSettings(qps=0.0, lean_http=path == "lean")) for path in PATHS
    }
    for client in clients.values():  # warm: connections open, code paths taken once
        await client.get("/api/v1/nodes")
    figures: dict[str, list[float]] = {f"{p} {s}": [] for p in PATHS for s in ("seq", "conc")}
    it = iter(pods)
    for r in range(args.rounds):
        for shape, in_flight in (("seq", 1), ("conc", args.in_flight)):
            for path in PATHS if r % 2 == 0 else PATHS[::-1]:
                batch = [next(it) for _ in range(args.batch)]
                us = await _batch(clients[path], batch, node, in_flight) * 1e6
                figures[f"{path} {shape}"].append(us)
                print(f"round {r} {path:8s}{shape:5s} {us:6.0f} us CPU/binding", flush=True)
    for client in clients.values():
        await client.close()
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batch", type=int, default=500, help="bindings per batch")
    ap.add_argument("--in-flight", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        proc, server = _start_sim(kubeconfig)
        try:
            pods = _create_pods(server, args.rounds * 4 * args.batch)
            with urllib.request.urlopen(server + "/api/v1/nodes") as resp:
                node = json.loads(resp.read())["items"][0]["metadata"]["name"]
            figures = asyncio.run(_run(kubeconfig, pods, node, args))
        finally:
            proc.terminate()
            proc.wait(10)
    for shape in ("seq", "conc"):
        lean, aio = (statistics.median(figures[f"{p} {shape}"]) for p in PATHS)
        print(
            f"{shape}: median lean {lean:.0f} us, aiohttp {aio:.0f} us CPU/binding; "
            f"lean/aiohttp {lean / aio:.2f}"
        )
    print("load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
