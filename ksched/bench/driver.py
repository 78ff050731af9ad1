"""One benchmark run: start both processes, build the initial state, measure the measured pods only.

Order, as in upstream scheduler_perf (createNodes, createPods with a barrier, then the measured
createPods with collectMetrics): nodes and bound initial pods are created through the embedded
cluster's ``/admin`` endpoints before the scheduler starts; the scheduler starts and lists them;
initial pods that need scheduling are created and waited for; then the scheduler's ``/metrics`` and
both processes' CPU time are sampled, churn starts, and the measured pods are created (all at once,
or at a rate). The run ends when every measured pod that can be placed is bound, when nothing was
bound for ``stall_s``, or at the workload's timeout. Binding times come from the cluster's audit log
(its clock is the wall clock of the same machine), so they do not depend on this process's timing.

Measured pods are told apart by name: ``measured<group>-<n>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from ksched.bench import extender as bench_extender
from ksched.bench import profile, promtext, quality, stats, storage
from ksched.bench.cluster_client import ClusterClient
from ksched.bench.errors import BenchError
from ksched.bench.procs import ProcSample, SimProcess, children, sample, start_sim
from ksched.bench.workload import Churn, PodGroup, Workload
from ksched.model.paths import CORE, collection_path, node_path, pod_path
from ksched.sim.workloads import make_nodes, make_pods
from ksched.simrun import start_scheduler, stop_process

MEASURED_PREFIX = "measured"
INIT_PREFIX = "init"
POLL_S = 0.25
GONE_CHECK_S = 1.0
"""After this long without a new binding, the driver checks whether the pods still missing are gone."""
ADMIN_CONCURRENCY = 8
ATTEMPT = "scheduler_scheduling_attempt_duration_seconds"
EXTENSION_POINT = "scheduler_framework_extension_point_duration_seconds"
PLUGIN = "scheduler_plugin_execution_duration_seconds"
ALGORITHM = "scheduler_scheduling_algorithm_duration_seconds"
ATTEMPTS_TOTAL = "scheduler_schedule_attempts_total"
SETTLE_S = 5.0
CREATE_BATCH = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchOptions:
    """How to run (not what: that is the workload)."""

    out_dir: Path
    profile: bool = False
    """Take a cProfile of the scheduling thread over the measured phase (``scheduler.pstats``)."""
    stall_s: float = 30.0
    """End the measured phase when no measured pod was bound for this long."""
    config_path: str | None = None
    """KubeSchedulerConfiguration for the scheduler (default: upstream's, unlimited client QPS)."""
    verbosity: int = 0
    progress: bool = True
    start_pods: bool = False
    """Let the cluster's kubelet stand-in start bound pods. Off by default: upstream's scheduler_perf
    has no kubelets, and starting pods costs both processes a write or an event per pod."""
    extender: tuple[str, ...] = ()
    """Run the example extender with these verbs and configure the scheduler with it
    (:mod:`ksched.bench.extender`); empty: no extender."""
    pin: bool = False
    """Give the scheduler one CPU of its own and the embedded cluster and this driver the others,
    as in a cluster where the API server does not share the scheduler's core (see :func:`split_cpus`)."""


def split_cpus() -> tuple[frozenset[int], frozenset[int]]:
    """(the scheduler's CPU, everyone else's) for ``--pin``: the first CPU this process may use,
    and the rest. Linux only; needs two CPUs or more."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise BenchError(f"--pin needs at least 2 CPUs; this process may use {len(allowed)}")
    return frozenset(allowed[:1]), frozenset(allowed[1:])


class _Progress:
    """One line on stderr, redrawn in place on a terminal, printed every 10 s otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._last_line = time.monotonic()

    def update(self, bound: int, elapsed: float, final: bool = False) -> None:
        if not self.enabled:
            return
        rate = bound / elapsed if elapsed > 0 else 0.0
        width = 30
        filled = int(width * bound / max(self.total, 1))
        text = f"[{'#' * filled}{'.' * (width - filled)}] {bound}/{self.total} bound, {rate:,.0f} pods/s"
        if self.tty:
            sys.stderr.write(f"\r{text} " + ("\n" if final else ""))
            sys.stderr.flush()
        elif final or time.monotonic() - self._last_line >= 10:
            self._last_line = time.monotonic()
            sys.stderr.write(text + "\n")


async def _bound_init_pods(cluster: ClusterClient, workload: Workload) -> None:
    """Initial pods with ``bound: true``: spec.nodeName dealt round-robin, one request per node."""
    groups = [(i, g) for i, g in enumerate(workload.init_pods) if g.bound and g.count]
    if not groups:
        return
    names = [n["metadata"]["name"] for n in await cluster.node_list()]
    sem = asyncio.Semaphore(ADMIN_CONCURRENCY)

    async def one(gi: int, g: PodGroup, node: str, count: int) -> None:
        m = orjson.loads(orjson.dumps(storage.pod_manifest(g)))
        m["spec"]["nodeName"] = node
        prefix = f"{INIT_PREFIX}{gi}-{node}-"
        async with sem:
            await _claims_for(cluster, g, [f"{prefix}{i}" for i in range(count)])
            await cluster.add_pods(count, m, g.namespace, prefix)

    jobs = []
    for gi, g in groups:
        per, extra = divmod(g.count, len(names))
        for j, node in enumerate(names):
            n = per + (1 if j < extra else 0)
            if n:
                jobs.append(one(gi, g, node, n))
    await asyncio.gather(*jobs)


async def _claims_for(cluster: ClusterClient, group: PodGroup, pod_names: list[str]) -> None:
    """The claims (and bound volumes) of these pods of ``group``, created before the pods."""
    claims, volumes = storage.claims_and_volumes(group, pod_names)
    if claims:
        await cluster.bulk_create("persistentvolumeclaims", claims, group.namespace)
    if volumes:
        await cluster.bulk_create("persistentvolumes", volumes)


def _measured_batches(workload: Workload) -> list[tuple[int, str, int]]:
    """(group, name prefix, count) of each creation request of the measured pods (rate 0)."""
    out = []
    for gi, g in enumerate(workload.measured_pods):
        for batch, first in enumerate(range(0, g.count, CREATE_BATCH)):
            out.append((gi, f"{MEASURED_PREFIX}{gi}-{batch}-", min(CREATE_BATCH, g.count - first)))
    return out


async def _wait_bound(cluster: ClusterClient, expected: int, stall_s: float, prefix: str) -> int:
    """Wait until ``expected`` pods whose name starts with ``prefix`` are bound (or progress stalls)."""
    bound, last_change = 0, time.monotonic()
    while bound < expected and time.monotonic() - last_change < stall_s:
        await asyncio.sleep(POLL_S)
        new = sum(
            1 for r in await cluster.new_bindings() if r["result"] == "bound" and r["name"].startswith(prefix)
        )
        if new:
            bound, last_change = bound + new, time.monotonic()
    return bound


async def _churn(
    cluster: ClusterClient, churn: Churn, index: int, stop: asyncio.Event, created: list[int]
) -> None:
    """Create (or delete and re-create) one object every ``interval_s`` until ``stop``."""
    k = 0
    previous: str | None = None
    while not stop.is_set():
        if churn.mode == "recreate" and previous is not None:
            await cluster.delete(previous)
        if churn.kind == "pod":
            obj = make_pods(1, churn.manifest, churn.namespace, f"churn{index}-", start=k)[0]
            await cluster.create(collection_path(CORE, "pods", churn.namespace), obj)
            previous = pod_path(churn.namespace, obj["metadata"]["name"])
        else:
            obj = make_nodes(1, churn.manifest, name_prefix=f"churn{index}-node-", start=k)[0]
            await cluster.create(collection_path(CORE, "nodes"), obj)
            previous = node_path(obj["metadata"]["name"])
        created[0] += 1
        k += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), churn.interval_s)


async def _create_measured(cluster: ClusterClient, workload: Workload, created_at: dict[str, float]) -> None:
    """Create every measured group at its rate, or as fast as the cluster takes them (back-to-back
    requests of ``CREATE_BATCH`` pods, as upstream's parallel creators do); ``created_at`` maps each
    request's name prefix to when it was sent."""

    async def group(gi: int) -> None:
        g = workload.measured_pods[gi]
        manifest = storage.pod_manifest(g)
        if g.rate <= 0:
            for batch_group, prefix, count in _measured_batches(workload):
                if batch_group == gi:
                    created_at[prefix] = time.time()
                    await cluster.add_pods(count, manifest, g.namespace, prefix)
            return
        start, done, batch = time.monotonic(), 0, 0
        while done < g.count:
            due = min(g.count, math.floor((time.monotonic() - start) * g.rate) + 1)
            if due > done:
                prefix = f"{MEASURED_PREFIX}{gi}-{batch}-"
                created_at[prefix] = time.time()
                await _claims_for(cluster, g, [f"{prefix}{i}" for i in range(due - done)])
                await cluster.add_pods(due - done, manifest, g.namespace, prefix)
                done, batch = due, batch + 1
            await asyncio.sleep(0.05)

    await asyncio.gather(*(group(i) for i in range(len(workload.measured_pods))))


def _created_time(name: str, created_at: dict[str, float]) -> float | None:
    """Names are ``<prefix><n>`` and every prefix ends with ``-``."""
    return created_at.get(name.rsplit("-", 1)[0] + "-")


async def _scrape(session: aiohttp.ClientSession, port: int) -> promtext.Scrape:
    async with session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        return promtext.parse(await resp.text())


async def _wait_attempted(session: aiohttp.ClientSession, port: int, expected: int, stall_s: float) -> None:
    """Wait until the scheduler has found ``expected`` pods unschedulable at least once (init pods
    with ``skipWaitToCompletion``), or its attempts stop growing for ``stall_s``."""
    seen, last_change = -1.0, time.monotonic()
    while time.monotonic() - last_change < stall_s:
        tried = (await _scrape(session, port)).value(ATTEMPTS_TOTAL, result="unschedulable")
        if tried >= expected:
            return
        if tried > seen:
            seen, last_change = tried, time.monotonic()
        await asyncio.sleep(0.2)


async def _settled_delta(
    session: aiohttp.ClientSession, port: int, before: promtext.Scrape, bound: int
) -> promtext.Scrape:
    """The metrics' change over the measured phase, once the scheduler has counted every binding.

    The audit log sees a binding before the scheduler has read the API's answer and recorded the
    attempt, so scrape until ``schedule_attempts_total{result="scheduled"}`` caught up (at most
    ``SETTLE_S``).
    """
    deadline = time.monotonic() + SETTLE_S
    while True:
        delta = (await _scrape(session, port)).minus(before)
        if delta.value(ATTEMPTS_TOTAL, result="scheduled") >= bound or time.monotonic() > deadline:
            return delta
        await asyncio.sleep(0.1)


def _proc_figures(before: ProcSample | None, after: ProcSample | None) -> dict[str, Any]:
    if before is None or after is None:
        return {"cpu_s": None, "cpu_s_total": None, "peak_rss_mb": None}
    return {
        "cpu_s": round(after.cpu_s - before.cpu_s, 3),
        "cpu_s_total": round(after.cpu_s, 3),
        "peak_rss_mb": round(after.peak_rss_bytes / 2**20, 1),
    }


def _histogram_table(scrape: promtext.Scrape, name: str, *labels: str) -> dict[str, dict[str, float]]:
    return {
        "/".join(k): {m: round(v, 4) for m, v in h.summary().items()}
        for k, h in sorted(scrape.by_label(name, *labels).items())
    }


async def _initial_state(cluster: ClusterClient, workload: Workload) -> None:
    """What exists before the scheduler starts: namespaces, storage objects, nodes (and their
    CSINodes) and the initial pods that are bound directly."""
    namespaces = {g.namespace for g in (*workload.init_pods, *workload.measured_pods)}
    namespaces |= {c.namespace for c in workload.churn if c.kind == "pod"}
    for ns in sorted(namespaces):
        await cluster.namespace(ns)
    for obj in workload.storage:
        await cluster.create_object(obj)
    for group in workload.nodes:
        if group.count:
            await cluster.add_nodes(group)
    if csi_nodes := storage.csi_nodes(workload):
        await cluster.bulk_create("csinodes", csi_nodes)
    await _bound_init_pods(cluster, workload)


async def _scheduled_init_pods(
    session: aiohttp.ClientSession, cluster: ClusterClient, workload: Workload, opts: BenchOptions, port: int
) -> int:
    """Create the initial pods the scheduler places; wait until they are bound, or, for groups
    with ``skipWaitToCompletion``, until each was tried once. Returns how many were bound."""
    unbound_init = parked = 0
    for gi, g in enumerate(workload.init_pods):
        if not g.bound and g.count:
            prefix = f"{INIT_PREFIX}{gi}-"
            await _claims_for(cluster, g, [f"{prefix}{i}" for i in range(g.count)])
            await cluster.add_pods(g.count, storage.pod_manifest(g), g.namespace, prefix)
            parked += g.count if g.skip_wait else 0
            unbound_init += 0 if g.skip_wait else g.count
    init_bound = await _wait_bound(cluster, unbound_init, opts.stall_s, INIT_PREFIX) if unbound_init else 0
    if parked:
        await _wait_attempted(session, port, parked, opts.stall_s)
    return init_bound


async def run_once(workload: Workload, opts: BenchOptions, workdir: Path) -> dict[str, Any]:
    """One run in fresh processes; returns the run's section of results.json."""
    workdir.mkdir(parents=True, exist_ok=True)
    total_pods = sum(g.count for g in workload.init_pods) + workload.measured_count
    sched_cpus: frozenset[int] | None = None
    other_cpus: frozenset[int] | None = None
    own_cpus = os.sched_getaffinity(0) if opts.pin else None
    if opts.pin:
        sched_cpus, other_cpus = split_cpus()
        os.sched_setaffinity(0, other_cpus)  # this driver (its loop thread) with the cluster
    sim = await asyncio.to_thread(
        start_sim,
        workdir,
        history_window=max(10_000, 4 * total_pods),
        verbosity=opts.verbosity,
        start_pods=opts.start_pods,
        storage_controllers=workload.provisions,
        cpus=other_cpus,
    )
    sched = None
    ext_proc = None
    config_path = opts.config_path
    try:
        if opts.extender:
            ext_proc, url = await asyncio.to_thread(bench_extender.start, workdir, opts.extender)
            config_path = bench_extender.config(workdir, opts.config_path, url, opts.extender)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        async with aiohttp.ClientSession(
            timeout=timeout, connector=aiohttp.TCPConnector(limit=32)
        ) as session:
            cluster = ClusterClient(session, sim.url)
            await _initial_state(cluster, workload)
            sched = await asyncio.to_thread(
                start_scheduler,
                workdir,
                sim.kubeconfig,
                config_path=config_path,
                verbosity=opts.verbosity,
                cpus=sched_cpus,
            )
            proc, port, _ = sched
            init_bound = await _scheduled_init_pods(session, cluster, workload, opts, port)
            for gi, prefix, count in _measured_batches(workload):
                g = workload.measured_pods[gi]
                if g.rate <= 0:  # claims of rate-limited groups are created with their pods
                    await _claims_for(cluster, g, [f"{prefix}{i}" for i in range(count)])
            await cluster.new_bindings()  # skip anything left over from the setup
            result = await _measure(workload, opts, workdir, session, cluster, sim, proc, port)
            result["init_pods"] = {
                "created": total_pods - workload.measured_count,
                "scheduled_by_scheduler": init_bound,
            }
            result["pinned"] = (
                {"scheduler": sorted(sched_cpus), "sim_and_driver": sorted(other_cpus)}
                if sched_cpus is not None and other_cpus is not None
                else None
            )
            return result
    finally:
        if sched is not None:
            await asyncio.to_thread(stop_process, sched[0])
        if ext_proc is not None:
            await asyncio.to_thread(stop_process, ext_proc)
        await asyncio.to_thread(sim.stop)
        if own_cpus is not None:
            os.sched_setaffinity(0, own_cpus)  # a caller in this process keeps its CPUs


async def _measure(
    workload: Workload,
    opts: BenchOptions,
    workdir: Path,
    session: aiohttp.ClientSession,
    cluster: ClusterClient,
    sim: SimProcess,
    proc: Any,
    port: int,
) -> dict[str, Any]:
    before = await _scrape(session, port)
    failures_before = await _failed_scheduling_writes(cluster)
    pids = _process_pids(proc, sim)
    cpu_before = {name: sample(pid) for name, pid in pids.items()}
    profile_task = None
    if opts.profile:
        profile_task = asyncio.create_task(profile.fetch_profile(session, port))
    stop_churn = asyncio.Event()
    churned = [0]
    churn_tasks = [
        asyncio.create_task(_churn(cluster, c, i, stop_churn, churned)) for i, c in enumerate(workload.churn)
    ]
    created_at: dict[str, float] = {}
    start = time.time()
    creator = asyncio.create_task(_create_measured(cluster, workload, created_at))
    seen = await _watch_bindings(workload, opts, workdir, cluster, proc, creator, start)
    creator.cancel()
    stop_churn.set()
    with contextlib.suppress(Exception):
        await asyncio.gather(*churn_tasks, return_exceptions=True)
    delta = await _settled_delta(session, port, before, len(seen.binds))
    failure_writes = await _failed_scheduling_writes(cluster) - failures_before
    cpu_after = {name: sample(pid) for name, pid in pids.items()}
    nodes = await cluster.node_list()
    pods = await _pods_of(cluster, workload.measured_pods)
    init_pods = await _pods_of(cluster, workload.init_pods)
    taken = None
    if profile_task is not None:
        proc.send_signal(signal.SIGTERM)
        taken = await profile.save_profile(profile_task, workdir)
    return {
        **_binding_figures(workload, seen, pods, created_at, start),
        **_metric_figures(delta),
        "processes": {k: _proc_figures(cpu_before[k], cpu_after[k]) for k in pids},
        "churn_objects": churned[0],
        "failed_scheduling_writes": failure_writes,
        "quality": quality.figures(workload, pods, init_pods, nodes, MEASURED_PREFIX),
        "profile": taken,
    }


async def _failed_scheduling_writes(cluster: ClusterClient) -> int:
    """The FailedScheduling Event writes so far: one create per Event object, and one more for
    each that became a series (client-go's broadcaster patches a series once in its 6-minute
    window; later repeats only count up in its cache until the half-hour refresh)."""
    events = await cluster.events()
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    return len(failed) + sum(1 for e in failed if e.get("series"))


def run_repeatedly(
    workload: Workload, opts: BenchOptions, out: Path, repeat: int, heading: str, detail: str
) -> list[dict[str, Any]]:
    """``repeat`` runs (at least one) of ``workload``, each in fresh processes and in ``out/run-K``;
    before each it prints ``heading, run K/N: detail`` (the progress line ``ksched bench`` shows)."""
    runs = []
    total = max(1, repeat)
    for k in range(total):
        print(f"{heading}, run {k + 1}/{total}: {detail}", flush=True)
        runs.append(asyncio.run(run_once(workload, opts, out / f"run-{k + 1}")))
    return runs


def _process_pids(proc: Any, sim: SimProcess) -> dict[str, int]:
    """The processes whose CPU a run counts. The driver (this process) shares the machine's cores
    with the other two, so its CPU counts too; the scheduler's bind worker
    (ksched.kube.bind_worker) is the scheduler's too, on a line of its own."""
    pids = {"scheduler": proc.pid, "sim": sim.proc.pid, "driver": os.getpid()}
    for k, child in enumerate(children(proc.pid)):
        pids["bind worker" if k == 0 else f"bind worker {k + 1}"] = child
    return pids


@dataclass(slots=True)
class _Seen:
    """The measured pods' bindings from the audit log: uid -> (time, name, node), and repeats."""

    binds: dict[str, tuple[float, str, str]]
    double: int = 0


async def _watch_bindings(
    workload: Workload,
    opts: BenchOptions,
    workdir: Path,
    cluster: ClusterClient,
    proc: Any,
    creator: asyncio.Task[None],
    start: float,
) -> _Seen:
    """Poll the audit log until every measured pod that can be is bound, binding stalls for
    ``stall_s``, the workload's timeout passes, or the measured pods left are gone."""
    seen = _Seen({})
    target = workload.measured_count - workload.expect_unschedulable
    progress = _Progress(workload.measured_count, opts.progress)
    last_change = last_gone_check = time.monotonic()
    deadline = time.monotonic() + workload.timeout_s
    while True:
        await asyncio.sleep(POLL_S)
        for r in await cluster.new_bindings():
            if r["result"] != "bound" or not r["name"].startswith(MEASURED_PREFIX):
                continue
            if r["uid"] in seen.binds:
                seen.double += 1
                continue
            seen.binds[r["uid"]] = (float(r["timestamp"]), r["name"], r["node"])
            last_change = time.monotonic()
        progress.update(len(seen.binds), time.time() - start)
        if creator.done():
            creator.result()
        if proc.poll() is not None:
            raise BenchError(
                f"the scheduler exited with status {proc.returncode}; see {workdir / 'scheduler.log'}"
            )
        now = time.monotonic()
        done = creator.done() and len(seen.binds) >= target
        if done or now - last_change > opts.stall_s or now > deadline:
            break
        if creator.done() and now - last_change > GONE_CHECK_S and now - last_gone_check > GONE_CHECK_S:
            # A measured pod can be preempted while its binding is in flight (upstream allows
            # assumed pods as victims): once it is gone, waiting stall_s for it measures nothing.
            last_gone_check = now
            if await _all_settled(cluster, workload, seen.binds, target):
                break
    progress.update(len(seen.binds), time.time() - start, final=True)
    return seen


async def _pods_of(cluster: ClusterClient, groups: tuple[PodGroup, ...]) -> list[dict[str, Any]]:
    """Every pod in the namespaces of ``groups``, namespace by namespace."""
    pods: list[dict[str, Any]] = []
    for ns in sorted({g.namespace for g in groups}):
        pods.extend(await cluster.pod_list(ns))
    return pods


def _binding_figures(
    workload: Workload, seen: _Seen, pods: list[dict[str, Any]], created_at: dict[str, float], start: float
) -> dict[str, Any]:
    """What the audit log and the final pod list say: bound, pending, throughput, latency."""
    binds = seen.binds
    bind_times = [t for t, _, _ in binds.values()]
    latencies = []
    for t, name, _ in binds.values():
        c = _created_time(name, created_at)
        if c is not None:
            latencies.append(max(0.0, t - c))
    samples = stats.throughput_samples(bind_times, start)
    elapsed = (max(bind_times) - start) if bind_times else time.time() - start
    return {
        "measured_pods": workload.measured_count,
        "bound": len(binds),
        "unscheduled": workload.measured_count - len(binds),
        "pending_at_end": sum(
            1
            for p in pods
            if p["metadata"]["name"].startswith(MEASURED_PREFIX) and not p["spec"].get("nodeName")
        ),
        "deleted_before_bound": _deleted_unbound(pods, binds, workload.measured_count),
        "expected_unschedulable": workload.expect_unschedulable,
        "double_bindings": seen.double,
        "seconds": round(elapsed, 3),
        "pods_per_second": round(len(binds) / elapsed, 1) if elapsed > 0 else 0.0,
        "throughput": {
            **{k: round(v, 1) for k, v in stats.throughput_summary(samples).items()},
            "samples": [round(s, 1) for s in samples],
        },
        "e2e_latency_ms": {k: round(v * 1000, 1) for k, v in stats.latency_summary(latencies).items()},
        "e2e_latency_cdf_ms": _cdf(latencies),
    }


def _metric_figures(delta: promtext.Scrape) -> dict[str, Any]:
    """What the scheduler's own metrics say over the measured window."""
    attempts = delta.hist(ATTEMPT, result="scheduled")
    tried = sum(delta.value(ATTEMPTS_TOTAL, result=r) for r in ("scheduled", "unschedulable", "error"))
    scheduled = delta.value(ATTEMPTS_TOTAL, result="scheduled")
    return {
        "attempts_per_scheduled_pod": round(tried / scheduled, 3) if scheduled else None,
        "attempt_duration_ms": {k: round(v, 3) for k, v in attempts.summary().items()},
        "algorithm_duration_ms": {k: round(v, 3) for k, v in delta.hist(ALGORITHM).summary().items()},
        "attempts": {
            r: delta.value(ATTEMPTS_TOTAL, result=r) for r in ("scheduled", "unschedulable", "error")
        },
        "extension_points": _histogram_table(delta, EXTENSION_POINT, "extension_point"),
        "plugins": _histogram_table(delta, PLUGIN, "plugin", "extension_point"),
        "preemption": {
            "attempts": delta.value("scheduler_preemption_attempts_total"),
            "victims": delta.hist("scheduler_preemption_victims").sum,
        },
        "extenders": bench_extender.figures(delta),
    }


async def _all_settled(
    cluster: ClusterClient, workload: Workload, binds: dict[str, Any], target: int
) -> bool:
    """Whether every measured pod is bound or deleted: the run can end without waiting ``stall_s``."""
    alive_unbound = 0
    for ns in sorted({g.namespace for g in workload.measured_pods}):
        for p in await cluster.pod_list(ns):
            meta = p["metadata"]
            if meta["name"].startswith(MEASURED_PREFIX) and meta["uid"] not in binds:
                alive_unbound += 1
    return alive_unbound <= workload.measured_count - target


def _deleted_unbound(pods: list[dict[str, Any]], binds: dict[str, Any], created: int) -> int:
    """Measured pods that are gone and were never bound: deleted (e.g. preempted) while pending."""
    alive = {p["metadata"]["uid"] for p in pods if p["metadata"]["name"].startswith(MEASURED_PREFIX)}
    return created - len(alive | set(binds))


def _cdf(latencies: list[float], points: int = 101) -> list[float]:
    """Latency (ms) at 0%, 1%, ..., 100%: enough to draw the CDF without keeping every pod."""
    if not latencies:
        return []
    s = sorted(latencies)
    return [
        round(s[min(len(s) - 1, round(i * (len(s) - 1) / (points - 1)))] * 1000, 2) for i in range(points)
    ]
