"""``SimCluster``: the embedded cluster as one object (store + API server + kubelet + faults + audit).

Use it from synchronous tests (``start()`` runs the server on its own asyncio loop in a daemon thread
and returns the URL; ``stop()`` joins it) or from async code already running a loop
(``await start_async()`` / ``await stop_async()``). It listens on 127.0.0.1 with a free port unless told
otherwise. The store is reachable in-process (``cluster.store``), so tests can seed 100,000 pods without
HTTP and read them back, and ``cluster.audit`` holds every binding decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from ksched.sim._clock import Clock
from ksched.sim._http import ApiServer
from ksched.sim.config import SimConfig
from ksched.sim.faults import AuditLog, FaultConfig, FaultInjector
from ksched.sim.kubelet import Kubelet
from ksched.sim.store import Obj, Store
from ksched.sim.workloads import make_nodes, make_pods


class SimCluster:
    """An in-memory Kubernetes API server with simulated nodes; see the module docstring."""

    def __init__(
        self,
        config: SimConfig | None = None,
        *,
        faults: FaultConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config or SimConfig()
        self.store = Store(clock=clock, history_window=self.config.history_window, seed=self.config.seed)
        self.audit = AuditLog(clock=self.store.clock)
        self.faults = FaultInjector(faults)
        self.kubelet = Kubelet(
            self.store,
            running_delay_s=self.config.running_delay_s,
            grace_scale=self.config.grace_scale,
            start_pods=self.config.start_pods,
        )
        self.api = ApiServer(self.store, self.faults, self.audit, self.config)
        self.url = ""
        self._runner: web.ServerRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        for ns in self.config.default_namespaces:
            self.store.create("namespaces", {"metadata": {"name": ns}}, copy=False)

    # -- lifecycle ----------------------------------------------------------------------------------
    async def start_async(self) -> str:
        """Serve on the running loop; returns ``http://host:port``."""
        if self._runner is not None:
            raise RuntimeError("SimCluster already started")
        self._loop = asyncio.get_running_loop()
        self.api.closing = False
        if self.config.kubelet:
            self.kubelet.attach(self._loop)
        runner = web.ServerRunner(self.api.make_server(), shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.api.address = f"{host}:{port}"
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop_async(self) -> None:
        """Close watch streams, stop the kubelet stand-in and the HTTP server."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self.api.shutdown()
        self.kubelet.detach()
        await asyncio.sleep(0)
        await runner.cleanup()

    def start(self) -> str:
        """Serve from a daemon thread with its own event loop; returns the URL once listening."""
        if self._thread is not None:
            raise RuntimeError("SimCluster already started")
        loop = asyncio.new_event_loop()
        started: Any = __import__("concurrent.futures").futures.Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                started.set_result(loop.run_until_complete(self.start_async()))
            except BaseException as exc:
                started.set_exception(exc)
                loop.close()
                return
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="ksched-sim", daemon=True)
        self._thread.start()
        try:
            return str(started.result(timeout=30))
        except BaseException:
            self._thread.join()
            self._thread = None
            raise

    def stop(self) -> None:
        """Stop a server started with :meth:`start` and join its thread (idempotent)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(self.stop_async(), loop).result(timeout=30)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> SimCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- conveniences -------------------------------------------------------------------------------
    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """A kubeconfig (no credentials, plain http) accepted by kubectl and the kubernetes client."""
        if not self.url:
            raise RuntimeError("start the SimCluster before writing a kubeconfig")
        name = "ksched-sim"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
            "current-context": name,
            "preferences": {},
        }
        p = Path(path)
        p.write_text(yaml.safe_dump(doc, sort_keys=False))
        return p

    def add_nodes(
        self, count: int, template: Obj | None = None, zones: int = 0, *, name_prefix: str = "node-"
    ) -> int:
        """Create ``count`` nodes in-process (see :func:`~ksched.sim.workloads.make_nodes`)."""
        nodes = make_nodes(count, template, zones, name_prefix=name_prefix, start=self.store.count("nodes"))
        return self.store.bulk_create("nodes", nodes)

    def add_pods(
        self,
        count: int,
        template: Obj | None = None,
        namespace: str = "default",
        *,
        name_prefix: str = "pod-",
        start: int = 0,
    ) -> int:
        """Create ``count`` unbound pods in-process (see :func:`~ksched.sim.workloads.make_pods`)."""
        if self.store.get("namespaces", namespace) is None:
            self.store.create("namespaces", {"metadata": {"name": namespace}}, copy=False)
        pods = make_pods(count, template, namespace, name_prefix, start=start)
        return self.store.bulk_create("pods", pods, namespace=namespace)
