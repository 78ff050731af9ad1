"""``SimCluster``: the embedded cluster as one object (store + API server + kubelet + faults + audit).

Use it from synchronous tests (``start()`` runs the server on its own asyncio loop in a daemon thread
and returns the URL; ``stop()`` joins it) or from async code already running a loop
(``await start_async()`` / ``await stop_async()``). It listens on 127.0.0.1 with a free port unless told
otherwise. The store is reachable in-process (``cluster.store``), so tests can seed 100,000 pods without
HTTP and read them back, ``cluster.audit`` holds every binding decision and ``cluster.writes`` every
write request with the client that sent it.

The storage controller stand-ins (PV controller, CSI provisioner, ephemeral volume controller) run as
a child process talking HTTP to the cluster, started with :meth:`SimCluster.start_storage_controllers`
(or ``..._async``) and stopped with :meth:`SimCluster.stop_storage_controllers` or with the cluster;
``ksched sim`` and ``ksched sim serve`` start them by default, a bare ``SimCluster`` does not.
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
from ksched.sim._storage_process import StorageControllers, StorageControllersProcess
from ksched.sim.config import SimConfig
from ksched.sim.faults import AuditLog, FaultConfig, FaultInjector
from ksched.sim.kubelet import Kubelet
from ksched.sim.store import Obj, Store
from ksched.sim.workloads import make_nodes, make_pods
from ksched.sim.writes import WriteAudit


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
        self.writes = WriteAudit(self.store.clock)
        """Every write request and its outcome, by client (:mod:`ksched.sim.writes`)."""
        self.faults = FaultInjector(faults)
        self.kubelet = Kubelet(
            self.store,
            running_delay_s=self.config.running_delay_s,
            grace_scale=self.config.grace_scale,
            start_pods=self.config.start_pods,
        )
        self.api = ApiServer(self.store, self.faults, self.audit, self.config, writes=self.writes)
        self.url = ""
        self._runner: web.ServerRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._controllers: StorageControllersProcess | None = None
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
        """Stop the storage controllers, close watch streams, stop the kubelet stand-in and the server."""
        await self.stop_storage_controllers_async()
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
        self.stop_storage_controllers()
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

    # -- storage controllers (a child process) ------------------------------------------------------
    @property
    def storage_controllers(self) -> StorageControllersProcess | None:
        """The running stand-ins' process, if started."""
        return self._controllers

    def _spawn_controllers(
        self, which: StorageControllers, log_file: str | Path | None, resync_s: float
    ) -> StorageControllersProcess:
        if not self.url:
            raise RuntimeError("start the SimCluster before its storage controllers")
        self.stop_storage_controllers()
        host, port = self.api.address.rsplit(":", 1)
        if host in ("0.0.0.0", "::", ""):  # a wildcard bind: reach it on loopback
            host = "127.0.0.1" if host != "::" else "[::1]"
        proc = StorageControllersProcess(
            f"http://{host}:{port}", which, log_file=Path(log_file) if log_file else None, resync_s=resync_s
        )
        self._controllers = proc
        return proc

    def start_storage_controllers(
        self,
        *,
        pv_controller: bool = True,
        provisioner: bool = True,
        ephemeral: bool = True,
        log_file: str | Path | None = None,
        resync_s: float = 15.0,
    ) -> StorageControllersProcess:
        """Start the chosen stand-ins (replacing running ones) and wait until their caches synced.

        Blocks, so call it from a thread other than the server's loop (a cluster started with
        :meth:`start`); on the loop itself use :meth:`start_storage_controllers_async`.
        ``log_file`` receives the child's log (default: this process's stderr).
        """
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is self._loop:
            raise RuntimeError("the server's loop would block: use start_storage_controllers_async")
        which = StorageControllers(pv_controller=pv_controller, provisioner=provisioner, ephemeral=ephemeral)
        proc = self._spawn_controllers(which, log_file, resync_s)
        proc.wait_ready()
        return proc

    async def start_storage_controllers_async(
        self,
        *,
        pv_controller: bool = True,
        provisioner: bool = True,
        ephemeral: bool = True,
        log_file: str | Path | None = None,
        resync_s: float = 15.0,
    ) -> StorageControllersProcess:
        """:meth:`start_storage_controllers` for a cluster serving on the running loop."""
        which = StorageControllers(pv_controller=pv_controller, provisioner=provisioner, ephemeral=ephemeral)
        await asyncio.to_thread(self.stop_storage_controllers)
        proc = self._spawn_controllers(which, log_file, resync_s)
        await asyncio.to_thread(proc.wait_ready)
        return proc

    def stop_storage_controllers(self) -> None:
        """Stop the stand-ins' process, if running (idempotent)."""
        proc, self._controllers = self._controllers, None
        if proc is not None:
            proc.stop()

    async def stop_storage_controllers_async(self) -> None:
        if self._controllers is not None:
            await asyncio.to_thread(self.stop_storage_controllers)

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
