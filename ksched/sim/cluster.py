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
import secrets
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from ksched.errors import InputError
from ksched.sim._bootstrap_policy import bootstrap_objects
from ksched.sim._clock import Clock
from ksched.sim._http import ApiServer
from ksched.sim._secure import ADMIN_GROUPS, ADMIN_USER, SecureServing
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
        self.tls: SecureServing | None = None
        """Secure mode's certificates (``None`` when serving plain HTTP)."""
        if self.config.token_auth_file:
            self.api.access.tokens.load_csv(Path(self.config.token_auth_file))
        if self.config.secure:
            cert_dir = Path(self.config.cert_dir) if self.config.cert_dir else None
            self.tls = SecureServing(self.config.host, cert_dir=cert_dir)
            self._seed_secure_objects(self.tls)

    def _seed_secure_objects(self, tls: SecureServing) -> None:
        """What kube-apiserver creates at start: the bootstrap RBAC policy and the
        extension-apiserver-authentication ConfigMap (in kube-system, created if missing)."""
        if self.store.get("namespaces", "kube-system") is None:
            self.store.create("namespaces", {"metadata": {"name": "kube-system"}}, copy=False)
        for key, namespace, obj in bootstrap_objects():
            self.store.create(key, obj, namespace=namespace or None, copy=False)
        cm = tls.trust_configmap(self.api.access.request_header)
        self.store.create("configmaps", cm, namespace="kube-system", copy=False)

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
        ssl_context = self.tls.ssl_context() if self.tls is not None else None
        site = web.TCPSite(runner, self.config.host, self.config.port, ssl_context=ssl_context)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.api.address = f"{host}:{port}"
        self.url = f"{'https' if self.tls is not None else 'http'}://{host}:{port}"
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
        scheme, credentials = "http", None
        if self.tls is not None:
            # The stand-ins act for kube-controller-manager; a token of their own, in system:masters.
            token = secrets.token_urlsafe(32)
            self.add_token(token, "system:kube-controller-manager", ADMIN_GROUPS)
            scheme, credentials = "https", (self.tls.ca.cert_pem.decode(), token)
        proc = StorageControllersProcess(
            f"{scheme}://{host}:{port}",
            which,
            log_file=Path(log_file) if log_file else None,
            resync_s=resync_s,
            credentials=credentials,
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
    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        namespace: str = "default",
        user: str | None = None,
        groups: tuple[str, ...] | list[str] | None = None,
    ) -> Path:
        """A kubeconfig accepted by kubectl and the kubernetes client.

        Plain mode: no credentials, plain http (``user``/``groups`` are refused). Secure mode: the
        cluster CA and a client certificate for ``user`` in ``groups`` embedded, by default
        ``kubernetes-admin`` in ``system:masters``. Written with mode 0600 (it holds a key)."""
        if not self.url:
            raise RuntimeError("start the SimCluster before writing a kubeconfig")
        p = Path(path)
        if self.tls is not None:
            who = user or ADMIN_USER
            grp = tuple(groups) if groups is not None else (ADMIN_GROUPS if user is None else ())
            p.touch(mode=0o600)
            p.write_text(yaml.safe_dump(self.tls.kubeconfig(self.url, who, grp, namespace), sort_keys=False))
            return p
        if user is not None or groups:
            raise InputError(
                f"write_kubeconfig: user {user!r} / groups {groups!r} need a secure cluster "
                "(SimConfig(secure=True)); a plain one has no authentication"
            )
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
        p.write_text(yaml.safe_dump(doc, sort_keys=False))
        return p

    # -- credentials (secure mode; tokens in both) --------------------------------------------------
    def add_token(
        self, token: str, user: str, groups: tuple[str, ...] | list[str] = (), uid: str = ""
    ) -> None:
        """A static bearer token for ``user`` (as a ``--token-auth-file`` line would add it). Used for
        authentication in secure mode and by TokenReview in either mode."""
        self.api.access.tokens.add(token, user, tuple(groups), uid)

    def _require_tls(self, what: str) -> SecureServing:
        if self.tls is None:
            raise RuntimeError(f"{what} needs a secure cluster: SimConfig(secure=True)")
        return self.tls

    def issue_client_cert(self, user: str, groups: tuple[str, ...] | list[str] = ()) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) the cluster authenticates as ``user`` in ``groups``."""
        pair = self._require_tls("issue_client_cert").issue_client_cert(user, tuple(groups))
        return pair.cert_pem, pair.key_pem

    def issue_front_proxy_cert(self, common_name: str = "front-proxy-client") -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) signed by the front-proxy CA: with CommonName
        ``front-proxy-client`` its requests may name their user in ``X-Remote-User``."""
        pair = self._require_tls("issue_front_proxy_cert").issue_front_proxy_cert(common_name)
        return pair.cert_pem, pair.key_pem

    @property
    def ca_pem(self) -> bytes:
        """The cluster CA certificate (clients verify the server with it; it signs client certs)."""
        return self._require_tls("ca_pem").ca.cert_pem

    @property
    def front_proxy_ca(self) -> bytes:
        """The front-proxy CA certificate (``requestheader-client-ca-file``)."""
        return self._require_tls("front_proxy_ca").front_proxy_ca.cert_pem

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
