"""``ksched run``: wire a scheduler process together and run it until told to stop.

Two threads and a child process (DESIGN.md §1): the I/O thread runs one asyncio loop carrying every
API request (informers, events, status patches, the Lease) plus the metrics/health server; the main
thread runs the scheduling loop, the only writer of the cache and the queue; the bind worker
(:mod:`ksched.kube.bind_worker`, ``--bind-worker``) posts the bindings from a child process, or the
I/O loop does when it is off.

Fencing (:mod:`ksched.kube.fence`): one :class:`Fence` per process. The scheduler's client, the
outbox, the plugin client and the bind worker (which shares it with its child) ask its write gate
before anything leaves; the leader-election client asks its Lease gate. Only the elector moves it.
Every client's User-Agent carries the replica's identity (``<hostname>_<uuid>``, the Lease holder
name), so the API server's audit tells each replica's requests apart.

Shutdown (SIGTERM or SIGINT): stop popping pods, let in-flight bindings finish (bounded wait),
stop every write, release the Lease, stop the I/O thread, exit 0. Losing the Lease shuts the fence
at once (nothing more is sent, not even what was queued: the pods stay pending for the next
leader), logs "Leaderelection lost" and exits 1 without waiting for requests in flight, as
kube-scheduler does, so a supervisor restarts the process as a standby.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import gc
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ksched.cache.cluster import ClusterCache
from ksched.config.extenders import with_ignored_resources
from ksched.config.features import DEFAULT_GATES, FeatureGates
from ksched.config.overrides import FlagOverrides, apply_overrides
from ksched.config.types import SchedulerConfiguration
from ksched.config.validation import PROTOBUF
from ksched.framework.handle import HandleServices
from ksched.framework.loader import PluginRegistry, load_with_plugins
from ksched.framework.profile import build_profiles
from ksched.framework.view import ClusterView
from ksched.kube.bind_worker import BindWorker
from ksched.kube.client import USER_AGENT, ApiClient
from ksched.kube.connection import Connection, load_connection
from ksched.kube.fence import UNFENCED, Fence
from ksched.kube.informer import Informer
from ksched.kube.io_thread import IOThread
from ksched.kube.request_metrics import RequestTally
from ksched.kube.writers import bind
from ksched.metrics import FrameworkMetrics, Metrics
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import pod_from_dict
from ksched.model.storage import DECODERS as STORAGE_DECODERS
from ksched.model.workloads import replica_set_from_dict, service_from_dict, stateful_set_from_dict
from ksched.model.workloads import replication_controller_from_dict as rc_from_dict
from ksched.scheduler.binder import ApiOutbox, Outbox, OutboxSettings
from ksched.scheduler.extenders import (
    ExtenderOutbox,
    HTTPExtender,
    RawNodes,
    build_extenders,
    raw_nodes_for,
)
from ksched.scheduler.inbox import Inbox, LeadershipChanged, StopRequested
from ksched.scheduler.leader import LeaderElectionSettings, LeaderElector, default_identity
from ksched.scheduler.loop import LOST_LEADERSHIP, Scheduler
from ksched.scheduler.plugin_client import PluginApiClient
from ksched.scheduler.profiling import profile_requester
from ksched.scheduler.queue.factory import queue_for
from ksched.scheduler.reporting import Reporter
from ksched.server.health import Health
from ksched.server.options import ServingOptions
from ksched.server.resources import PodResources

if TYPE_CHECKING:
    from ksched.server.app import Endpoints, ProfileRequester

log = logging.getLogger(__name__)
DRAIN_TIMEOUT_S = 10.0
LOST_WORKER_TIMEOUT_S = 1.0
"""After losing the Lease: how long the bind worker may take to answer before it is killed."""
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
"""Upstream's pod informer ignores finished pods: they hold no resources."""
GC_THRESHOLDS = (10_000, 10, 1_000_000_000)
"""The collector's thresholds once the caches are synced: a larger first generation (more short-lived
objects die before promotion) and no automatic full collections (see :func:`_tune_gc`)."""
FULL_GC_INTERVAL_S = 60.0
"""How often the process runs a full collection itself instead."""
LOADING_GC_MAX_S = 30.0
"""The longest the collector stays off for the initial lists (see :func:`_loading_gc`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    config_path: str | None = None
    overrides: FlagOverrides = field(default_factory=FlagOverrides)
    """The command-line values laid over the configuration (kube-scheduler's precedence)."""
    master: str = ""
    """--master: the API server URL, overriding the kubeconfig's server."""
    serving: ServingOptions = field(default_factory=ServingOptions)
    """The endpoint's serving, authentication and authorization flags."""
    feature_gates: FeatureGates = DEFAULT_GATES
    seed: int | None = None
    plugins: tuple[str, ...] = ()
    """Out-of-tree plugin factories, ``module:factory`` (``--plugin``), besides the entry points."""
    bind_worker: bool | None = None
    """Post bindings from a child process (:mod:`ksched.kube.bind_worker`); None: when the process
    may run on two or more CPUs (a lone CPU gains nothing from a second process)."""


def _connection(kubeconfig: str | None, master: str) -> Connection:
    """The API connection from the kubeconfig, with ``--master``'s server if given (as upstream's
    ``clientcmd.BuildConfigFromFlags``)."""
    connection = load_connection(kubeconfig)
    if not master:
        return connection
    server = master.rstrip("/")
    return dataclasses.replace(
        connection, server=server, ssl=None if server.startswith("http:") else connection.ssl
    )


def _informers(client: ApiClient, inbox: Inbox, raw_nodes: RawNodes | None = None) -> list[Informer]:
    """``raw_nodes``: keep the nodes' JSON for extenders that are sent Node objects."""
    sink = inbox.put
    nodes = (node_from_dict, sink) if raw_nodes is None else (raw_nodes.decode, raw_nodes.sink(sink))
    return [
        Informer(client, "nodes", "/api/v1/nodes", *nodes, skip_managed_fields=True),
        Informer(
            client,
            "pods",
            "/api/v1/pods",
            pod_from_dict,
            sink,
            field_selector=POD_FIELD_SELECTOR,
            skip_managed_fields=True,
        ),
        Informer(client, "namespaces", "/api/v1/namespaces", namespace_from_dict, sink),
        Informer(client, "poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets", pdb_from_dict, sink),
        # PodTopologySpread's default constraints take their selector from these (helper.DefaultSelector).
        Informer(client, "services", "/api/v1/services", service_from_dict, sink),
        Informer(client, "replicationcontrollers", "/api/v1/replicationcontrollers", rc_from_dict, sink),
        Informer(client, "replicasets", "/apis/apps/v1/replicasets", replica_set_from_dict, sink),
        Informer(client, "statefulsets", "/apis/apps/v1/statefulsets", stateful_set_from_dict, sink),
        # The volume plugins: claims and volumes, classes, and what the CSI drivers report.
        *(
            Informer(client, resource, path, STORAGE_DECODERS[kind][1], sink)
            for kind, resource, path in _STORAGE
        ),
    ]


_STORAGE = (
    ("PersistentVolume", "persistentvolumes", "/api/v1/persistentvolumes"),
    ("PersistentVolumeClaim", "persistentvolumeclaims", "/api/v1/persistentvolumeclaims"),
    ("StorageClass", "storageclasses", "/apis/storage.k8s.io/v1/storageclasses"),
    ("CSINode", "csinodes", "/apis/storage.k8s.io/v1/csinodes"),
    ("CSIDriver", "csidrivers", "/apis/storage.k8s.io/v1/csidrivers"),
    ("CSIStorageCapacity", "csistoragecapacities", "/apis/storage.k8s.io/v1/csistoragecapacities"),
    ("VolumeAttachment", "volumeattachments", "/apis/storage.k8s.io/v1/volumeattachments"),
)
"""(kind, informer resource, list path) of every storage informer."""


def _loading_gc(io: IOThread, *, pause: bool) -> None:
    """The collector's thresholds from the start and, with ``pause`` (the informers start at once,
    not after winning the Lease), no automatic collections while their initial lists load.

    Decoding a list page makes hundreds of thousands of dicts and lists at once; with CPython's
    default thresholds every 700 of them start a young collection and the growing heap triggers
    full ones, which together cost more than the decoding itself (a 10,000-pod list decodes about
    three times faster without them), and even the larger first generation of
    :data:`GC_THRESHOLDS` still costs a third of the parse and decode time in young passes over
    objects that all survive. Nothing made while loading forms cycles worth collecting early: the
    records are acyclic and freed pages go by reference counting. :func:`_tune_gc` turns the
    collector back on when the caches sync, or :data:`LOADING_GC_MAX_S` after the start if they
    have not by then, so a list that never completes does not leave it off.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    if not pause:
        return
    gc.disable()

    async def enable_later() -> None:
        await asyncio.sleep(LOADING_GC_MAX_S)
        gc.enable()

    io.submit(enable_later())


def _tune_gc(io: IOThread) -> None:
    """Keep CPython's cyclic collector off the cache once it is loaded.

    The cache holds one record per node and pod; they live for hours and form no cycles, yet every
    automatic full collection walks all of them, which at thousands of nodes is a large share of the
    scheduling thread's CPU. So the heap as synced is frozen (never scanned again), the collector
    is back on (:func:`_loading_gc` paused it), the first generation stays larger, and full
    collections run every :data:`FULL_GC_INTERVAL_S` from the I/O loop instead of whenever the
    long-lived heap grew by a quarter, which still frees cycles (finished requests, closed
    connections) in bounded time. Runs once, on the scheduling thread, when the caches sync, right
    before the first cycle: so it does not collect first (a full pass over the just-loaded heap
    would delay the first binding by a quarter of a second at 10,000 pods); the few cycles made
    while loading are frozen with it.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()

    async def collect_every(interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            gc.collect()

    io.submit(collect_every(FULL_GC_INTERVAL_S))


def _bind_worker(
    options: RunOptions,
    client: ApiClient,
    kubeconfig: str | None,
    *,
    fence: Fence | None = None,
    tally: RequestTally | None = None,
) -> BindWorker | None:
    """The bind worker this process uses, if any (see :attr:`RunOptions.bind_worker`); the
    requests it makes are counted in ``tally``."""
    wanted = options.bind_worker
    if options.master:
        wanted = False  # the child loads the kubeconfig itself and would miss --master's server
    if wanted is None:
        wanted = len(os.sched_getaffinity(0)) >= 2
    if not wanted:
        return None

    async def in_process(namespace: str, name: str, uid: str, node: str) -> None:
        await bind(client, namespace, name, uid, node)

    return BindWorker(
        in_process,
        kubeconfig=kubeconfig,
        qps=client.limiter.qps,
        burst=client.limiter.burst,
        max_in_flight=max(1, pool - 4) if (pool := client.settings.max_connections) > 0 else 256,
        request_metrics=tally,
        fence=fence,
        user_agent=f"{client.user_agent} bind-worker",
    )


@dataclass(frozen=True, slots=True)
class _Writers:
    """The API client every write but the Lease goes through, and what sends on it."""

    client: ApiClient
    bind_worker: BindWorker | None
    outbox: ApiOutbox


def _client(
    io: IOThread,
    options: RunOptions,
    config: SchedulerConfiguration,
    fence: Fence,
    user_agent: str,
    tally: RequestTally,
) -> ApiClient:
    """The API client every write but the Lease goes through (behind ``fence``); its requests are
    counted in ``tally``."""
    cc = config.client_connection
    return io.client(
        _connection(cc.kubeconfig or None, options.master),
        qps=cc.qps,
        burst=cc.burst,
        metrics=tally,
        gate=fence.writes,
        user_agent=user_agent,
    )


def _writers(
    io: IOThread,
    options: RunOptions,
    config: SchedulerConfiguration,
    client: ApiClient,
    inbox: Inbox,
    fence: Fence,
    metrics: Metrics,
    tally: RequestTally,
) -> _Writers:
    """The bind worker (sharing ``fence``, spawned at once) and the outbox around ``client``."""
    cc = config.client_connection
    fenced = fence.state != UNFENCED
    kubeconfig = cc.kubeconfig or None
    bind_worker = _bind_worker(options, client, kubeconfig, fence=fence if fenced else None, tally=tally)
    if bind_worker is not None:
        io.submit(bind_worker.start())  # in the background: the first binding waits for it if need be
        io.add_closer(bind_worker.close)
    # Upstream's events client has its own rate limit, with clientConnection's qps and burst.
    event_limits = OutboxSettings(event_qps=cc.qps, event_burst=cc.burst)
    outbox = ApiOutbox(
        io,
        client,
        inbox,
        event_limits,
        bind_worker=bind_worker,
        metrics=metrics,
        fence=fence.writes if fenced else None,
    )
    return _Writers(client, bind_worker, outbox)


@dataclass(frozen=True, slots=True)
class _Process:
    """What :func:`run` sets up before the scheduler: the configuration and the process-wide parts."""

    config: SchedulerConfiguration
    registry: PluginRegistry
    metrics: Metrics
    tally: RequestTally
    fence: Fence
    identity: str
    inbox: Inbox = field(default_factory=Inbox)
    cache: ClusterCache = field(default_factory=ClusterCache)


def _process(options: RunOptions) -> _Process:
    """The effective configuration, the metrics and the fence."""
    config, registry = load_with_plugins(options.config_path, options.plugins)
    config = _effective_config(config, options.overrides, options.feature_gates)
    config = with_ignored_resources(config)  # extenders' ignoredByScheduler resources, every profile
    tally = RequestTally()  # every API client's requests, the bind worker's included
    if registry.out_of_tree:
        log.info("out-of-tree plugins available: %s", ", ".join(sorted(registry.out_of_tree)))
    le = config.leader_election
    # --leader-elect is in the configuration already (overrides)
    fence = Fence(leader_election=le.leader_elect, lease=f"{le.resource_namespace}/{le.resource_name}")
    # The identity is also in every User-Agent, so each replica's requests are told apart.
    return _Process(config, registry, Metrics(rest_client=tally), tally, fence, default_identity())


def run(options: RunOptions) -> int:
    """Run a scheduler process; returns the exit status (1: the Lease was lost).

    The informers' lists and the bind worker's start come first, so the API server serves the
    lists, the I/O thread decodes them and the child starts up while this thread builds the
    profiles, the queue and the endpoints; the scheduler still waits for every informer to sync
    before its first cycle.
    """
    p = _process(options)
    config, fence, inbox = p.config, p.fence, p.inbox
    leader_elect = config.leader_election.leader_elect
    delay = leader_elect and config.delay_cache_until_active
    io = IOThread().start()
    _loading_gc(io, pause=not delay)
    try:
        client = _client(io, options, config, fence, f"{USER_AGENT} ({p.identity})", p.tally)
        writers = _writers(io, options, config, client, inbox, fence, p.metrics, p.tally)
        raw_nodes = raw_nodes_for(config.extenders)
        informers = _informers(client, inbox, raw_nodes)
        health = _health(config, fence)
        resources = _tee_resources(health, informers)
        if not delay:
            for informer in informers:
                informer.start(io)
            log.debug("informers started: %s", ", ".join(i.resource for i in informers))
        extenders = build_extenders(config.extenders, io, p.metrics.extender_request_duration, raw_nodes)
        scheduler = _scheduler(io, p, options, writers, extenders, informers, health)
        endpoints = _endpoints(config, p.metrics, health, resources, profile_requester(inbox))
        _serve(io, endpoints, options)
        election = _Election(health, inbox, fence, p.metrics, p.identity, p.tally, informers if delay else ())
        elector = _elect(io, client.connection, config, election) if leader_elect else None
        _install_signal_handlers(inbox)
        scheduler.run()
        health.stopping = True
        _shut_down(io, scheduler, informers, writers, elector)
    finally:
        io.stop()
        gc.enable()  # paused for the lists: a start that failed before the sync must not leave it off
    return 1 if scheduler.stop_reason == LOST_LEADERSHIP else 0


def _scheduler(
    io: IOThread,
    p: _Process,
    options: RunOptions,
    writers: _Writers,
    extenders: tuple[HTTPExtender, ...],
    informers: list[Informer],
    health: Health,
) -> Scheduler:
    """The profiles, the queue and the scheduling loop over them."""
    config, cache, inbox, outbox = p.config, p.cache, p.inbox, writers.outbox
    binds: Outbox = ExtenderOutbox(outbox, extenders, io, inbox) if extenders else outbox
    instance = socket.gethostname()
    reporter = Reporter(outbox, wall_clock=time.time, instance=instance)
    services = HandleServices(
        events=reporter,
        client=PluginApiClient(io, writers.client, fence=outbox.fence),
        snapshot=ClusterView(cache),
        extenders=extenders,
    )
    recorder = FrameworkMetrics(p.metrics)
    profiles = build_profiles(
        config, registry=p.registry, seed=options.seed, recorder=recorder, services=services
    )
    queue = queue_for(config, profiles, clock=time.monotonic, metrics=p.metrics)

    def synced() -> None:
        if not health.synced:
            _tune_gc(io)
        health.synced = True
        log.info(
            "caches synced: %d nodes, %d pending pods", len(cache.nodes), len(scheduler.handlers.pending)
        )

    scheduler = Scheduler(
        profiles=profiles,
        cache=cache,
        queue=queue,
        outbox=binds,
        inbox=inbox,
        metrics=p.metrics,
        instance=instance,
        reporter=reporter,
        leading=not config.leader_election.leader_elect,
        # Upstream waits for every informer before the first cycle: a pod scheduled before
        # the Services or PDBs are known would miss default spreading or preemption rules.
        required_kinds=frozenset(i.resource for i in informers),
        on_synced=synced,
    )
    return scheduler


def _health(config: SchedulerConfiguration, fence: Fence) -> Health:
    """What the health checks read; a replica without leader election counts as leading."""
    le = config.leader_election
    return Health(
        leader_election=le.leader_elect,
        leading=not le.leader_elect,
        # The fence's deadline is the last renewal's start plus renewDeadline.
        last_renewal=lambda: fence.writes.until - le.renew_deadline_s,
        lease_duration_s=le.lease_duration_s,
        lease_name=le.resource_name,
    )


def _serve(io: IOThread, endpoints: Endpoints, options: RunOptions) -> None:
    """Serve /metrics, /configz, the health checks and /debug from the I/O loop until it stops.

    The delegated-auth clients get no write gate: TokenReview and SubjectAccessReview are POSTs
    that change nothing, and a standby must still authenticate its scrapes and probes."""

    options.serving.refuse_unsupported()
    if options.serving.serves_nothing:
        log.info("serving nothing: --secure-port=0 and no --insecure-port")
        return  # the TLS and delegated-auth stack stays unimported: it costs start-up CPU
    from ksched.server.serve import start_serving  # the TLS and delegated-auth stack: after the lists start

    def auth_client(connection: Connection, role: str) -> ApiClient:
        return io.client(connection, qps=200.0, burst=400, user_agent=f"{USER_AGENT} {role}")

    start_serving(io, options.serving, endpoints, auth_client)


def _tee_resources(health: Health, informers: list[Informer]) -> PodResources:
    """/metrics/resources, fed by the pod informer's events on the I/O thread (so set up before
    the informers start)."""
    resources = PodResources(is_leader=lambda: health.leading)
    pods = next(i for i in informers if i.resource == "pods")
    pods.sink = resources.tee(pods.sink)
    return resources


def _endpoints(
    config: SchedulerConfiguration,
    metrics: Metrics,
    health: Health,
    resources: PodResources,
    request_profile: ProfileRequester,
) -> Endpoints:
    """What the endpoint serves."""
    from ksched.server.app import Endpoints
    from ksched.server.configz import componentconfig

    return Endpoints(
        registry=metrics.registry,
        health=health,
        componentconfig=lambda: componentconfig(config),
        request_profile=request_profile if config.enable_profiling else None,
        resources=resources,
    )


def _effective_config(
    config: SchedulerConfiguration, overrides: FlagOverrides, gates: FeatureGates
) -> SchedulerConfiguration:
    """``config`` with the flags over it; says which flags upstream's precedence ignores, and
    that ksched requests JSON where protobuf was asked for."""
    for flag in overrides.ignored():
        log.warning("flag --%s is ignored because --config is given (as kube-scheduler does)", flag)
    config = dataclasses.replace(apply_overrides(config, overrides), feature_gates=gates)
    if config.client_connection.content_type == PROTOBUF:
        log.info("clientConnection.contentType is %s: ksched requests and sends application/json", PROTOBUF)
    return config


@dataclass(frozen=True, slots=True)
class _Election:
    """What the election callbacks update: readiness, the loop, the fence's owner and the gauge."""

    health: Health
    inbox: Inbox
    fence: Fence
    metrics: Metrics
    identity: str
    tally: RequestTally
    delayed_informers: Sequence[Informer] = ()
    """delayCacheUntilActive: informers a standby starts only once it leads (upstream's
    scheduler.Run waits for leadership before starting the informer factories)."""


def _elect(
    io: IOThread, connection: Connection, config: SchedulerConfiguration, election: _Election
) -> LeaderElector:
    """Start campaigning for the Lease; leadership changes reach the loop through the inbox."""
    le = config.leader_election
    settings = LeaderElectionSettings(
        namespace=le.resource_namespace,
        name=le.resource_name,
        identity=election.identity,
        lease_duration_s=le.lease_duration_s,
        renew_deadline_s=le.renew_deadline_s,
        retry_period_s=le.retry_period_s,
    )
    status = election.metrics.leader_election_master_status.labels(name=le.resource_name)
    status.set(0)

    def started() -> None:
        for informer in election.delayed_informers:
            informer.start(io)
        election.health.leading = True
        status.set(1)
        election.inbox.put(LeadershipChanged(True))

    def stopped() -> None:  # the elector has shut the fence already
        election.health.leading = False
        status.set(0)
        election.inbox.put(LeadershipChanged(False))

    # Its own client (connection pool), as kube-scheduler has a separate leader-election client:
    # renewals must not queue behind hundreds of bindings for a connection and lose the lease.
    cc = config.client_connection
    le_client = io.client(
        connection,
        qps=cc.qps,
        burst=cc.burst,
        metrics=election.tally,
        gate=election.fence.lease_writes,
        user_agent=f"{USER_AGENT} ({election.identity}) leader-election",
    )
    elector = LeaderElector(le_client, settings, fence=election.fence, on_started=started, on_stopped=stopped)
    io.submit(elector.run())
    log.info(
        "waiting to acquire the lease %s/%s as %s", le.resource_namespace, le.resource_name, settings.identity
    )
    return elector


def _shut_down(
    io: IOThread,
    scheduler: Scheduler,
    informers: list[Informer],
    writers: _Writers,
    elector: LeaderElector | None,
) -> None:
    """Stop watching; then, on a clean stop, let in-flight bindings finish (bounded) and release the
    Lease. After losing the Lease, exit at once as kube-scheduler does ("Leaderelection lost"): the
    fence is shut, so nothing queued is sent and nothing in flight is waited for; the bind worker
    (which shares the fence) is given a moment to answer, then killed."""
    lost = scheduler.stop_reason == LOST_LEADERSHIP
    if lost:
        log.error("Leaderelection lost")
    else:
        log.info("stopping: %s", scheduler.stop_reason)
    for informer in informers:
        informer.stop()
    scheduler.profiler.finish()
    outbox = writers.outbox
    if lost:
        worker = writers.bind_worker
        if worker is not None:
            io.run(worker.close(timeout_s=LOST_WORKER_TIMEOUT_S), timeout=LOST_WORKER_TIMEOUT_S + 2)
        io.run(outbox.close(), timeout=5)
        return
    try:
        io.run(outbox.drain(DRAIN_TIMEOUT_S), timeout=DRAIN_TIMEOUT_S + 1)
    except (TimeoutError, concurrent.futures.TimeoutError):
        log.warning("in-flight bindings did not finish within %.0fs", DRAIN_TIMEOUT_S)
    if elector is not None:
        try:
            io.run(elector.release(), timeout=5)
        except (TimeoutError, concurrent.futures.TimeoutError):
            log.warning("the Lease was not released within 5s; standbys wait for it to expire")
    io.run(outbox.close(), timeout=5)


def _install_signal_handlers(inbox: Inbox) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum: int, _frame: Any) -> None:
        inbox.put(StopRequested(f"received {signal.Signals(signum).name}"))

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
