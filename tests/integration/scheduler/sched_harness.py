"""Helpers for the scheduler's integration tests: an in-process scheduler, a ``ksched run`` subprocess,
and checks read from the embedded cluster's store and audit log.

:class:`InProcessScheduler` wires the pieces exactly as :func:`ksched.runner.run` does (it reuses the
runner's own helpers), but runs :meth:`Scheduler.run` on a background thread with no signal handlers,
and lets a test run a function *on the scheduling thread* (:meth:`InProcessScheduler.probe`) to read
the cache and the queue without racing the single writer.

:class:`KschedProcess` runs ``python -m ksched run`` with stderr in a file, so the test can read the
port it chose (``--insecure-port 0``), its logs and its exit status.
"""

from __future__ import annotations

import concurrent.futures
import gc
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ksched.cache.cluster import ClusterCache
from ksched.config import load_config
from ksched.framework.handle import HandleServices
from ksched.framework.profile import build_profiles
from ksched.framework.view import ClusterView
from ksched.kube.connection import load_connection
from ksched.kube.io_thread import IOThread
from ksched.metrics import Metrics
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from ksched.runner import _informers
from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.inbox import Inbox, StopRequested
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.plugin_client import PluginApiClient
from ksched.scheduler.queue.factory import queue_for
from ksched.sim import SimCluster, SimConfig
from ksched.sim._resources import BY_KEY

SIM = SimConfig(
    bookmark_interval_s=0.5,
    running_delay_s=0.0,
    grace_scale=0.0,
    slow_watcher_timeout_s=2.0,
    seed=1,
)
"""The embedded cluster these tests run against (quick bookmarks, no start-up or grace delays)."""

ROOT = Path(__file__).resolve().parents[3]
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
T = TypeVar("T")
EVENTS_V1 = BY_KEY["events.events.k8s.io"]

FAST_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: {leader_elect}
  leaseDuration: {lease}s
  renewDeadline: {renew}s
  retryPeriod: {retry}s
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: {max_backoff}
"""


def write_config(
    path: Path,
    *,
    leader_elect: bool = False,
    lease: float = 4,
    renew: float = 3,
    retry: float = 1,
    max_backoff: int = 10,
) -> Path:
    """A KubeSchedulerConfiguration with no client-side rate limit to speak of and a short lease
    (``max_backoff``: podMaxBackoffSeconds; upstream's default is 10)."""
    text = FAST_CONFIG.format(
        leader_elect=str(leader_elect).lower(), lease=lease, renew=renew, retry=retry, max_backoff=max_backoff
    )
    path.write_text(text)
    return path


def wait_until(
    predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------- in-process
class InProcessScheduler:
    """``ksched.runner.run`` minus the signal handlers and the health server, on a background thread."""

    def __init__(
        self,
        kubeconfig: Path,
        config_path: Path,
        *,
        seed: int = 0,
        page_size: int | None = None,
        outbox_settings: OutboxSettings | None = None,
    ) -> None:
        config = load_config(str(config_path))
        self.config = config
        self.metrics = Metrics()
        self.cache = ClusterCache()
        self.inbox = Inbox()
        self.io = IOThread(name="ksched-io-test").start()
        try:
            cc = config.client_connection
            self.client = self.io.client(load_connection(str(kubeconfig)), qps=cc.qps, burst=cc.burst)
            # Events are sent fast so that stop() can wait until every one has been sent (the default
            # 50/s would leave a backlog of Scheduled events to cancel at shutdown).
            settings = outbox_settings or OutboxSettings(event_qps=100_000.0, event_burst=100_000)
            self.outbox = ApiOutbox(self.io, self.client, self.inbox, settings, metrics=self.metrics)
            # As the runner builds them: binding-cycle plugins (VolumeBinding) write through the client.
            services = HandleServices(
                client=PluginApiClient(self.io, self.client, fence=None),
                snapshot=ClusterView(self.cache),
            )
            profiles = build_profiles(config, seed=seed, services=services)
            self.queue = queue_for(config, profiles, clock=time.monotonic, metrics=self.metrics)
            self.informers = _informers(self.client, self.inbox)
            self.scheduler = Scheduler(
                profiles=profiles,
                cache=self.cache,
                queue=self.queue,
                outbox=self.outbox,
                inbox=self.inbox,
                metrics=self.metrics,
                instance="test",
                leading=True,
                required_kinds=frozenset(i.resource for i in self.informers),
            )
            if page_size is not None:
                for informer in self.informers:
                    informer.page_size = page_size
        except BaseException:
            self.io.stop()
            raise
        self._probes: queue.SimpleQueue[tuple[Callable[[Scheduler], Any], concurrent.futures.Future[Any]]]
        self._probes = queue.SimpleQueue()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> InProcessScheduler:
        for informer in self.informers:
            informer.start(self.io)
        self._thread = threading.Thread(target=self._run, name="ksched-scheduling-test", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.scheduler.run(until=self._serve_probes)
        except BaseException as exc:  # surfaced by stop() and probe()
            self.error = exc
            raise

    def _serve_probes(self, s: Scheduler) -> bool:
        while True:
            try:
                fn, fut = self._probes.get_nowait()
            except queue.Empty:
                return False
            try:
                fut.set_result(fn(s))
            except BaseException as exc:
                fut.set_exception(exc)

    def probe(self, fn: Callable[[Scheduler], T], timeout: float = 10.0) -> T:
        """Run ``fn(scheduler)`` on the scheduling thread between two steps and return its result."""
        assert self._thread is not None and self._thread.is_alive(), f"scheduler not running: {self.error!r}"
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._probes.put((fn, fut))
        self.inbox.put(None)  # wake the loop if it sleeps on an empty queue
        return fut.result(timeout)

    def stop(self) -> None:
        """Stop the loop, the informers and the I/O thread (as ``runner.run`` does on SIGTERM)."""
        try:
            if self._thread is not None:
                self.inbox.put(StopRequested("test finished"))
                self._thread.join(10)
                assert not self._thread.is_alive(), "the scheduling thread did not stop"
                self._thread = None
            for informer in self.informers:
                informer.stop()
            if self.io.running:
                deadline = time.monotonic() + 10.0
                while time.monotonic() < deadline:
                    self.io.run(self.outbox.drain(5.0), timeout=6)
                    if not self.outbox._events and all(t.done() for t in self.outbox._tasks):
                        break
                    time.sleep(0.05)
                self.io.run(self.outbox.close(), timeout=5)
        finally:
            self.io.stop()
            gc.collect()  # an unclosed socket shows up here, in the test that leaked it
        if self.error is not None:
            raise AssertionError(f"the scheduling loop crashed: {self.error!r}") from self.error


# ---------------------------------------------------------------------------------------------- subprocess
HELD = (
    "import json, sys\n"
    "import kubernetes.client, kubernetes.config, prometheus_client\n"
    "import ksched.cli, ksched.runner\n"
    "argv = json.loads(sys.stdin.buffer.readline())\n"
    "raise SystemExit(ksched.cli.main(argv))\n"
)
"""An interpreter that imports what ``ksched run`` imports, then waits for its arguments on stdin."""


class KschedProcess:
    """``python -m ksched -v 2 run ...`` with stderr in a file; call :meth:`close` to reap it.

    ``held``: the interpreter starts and imports ksched at once but runs ``ksched run`` only on
    :meth:`release`, so a test that replaces replicas one after the other (a Deployment restarting
    them) pays the second or so of imports ahead of time. It is no replica until released: it has
    neither read its configuration nor opened a connection.
    """

    def __init__(
        self,
        name: str,
        kubeconfig: Path,
        config_path: Path,
        tmp: Path,
        *,
        leader_elect: bool,
        held: bool = False,
    ) -> None:
        self.name = name
        self.log_path = tmp / f"{name}.log"
        self._log = self.log_path.open("wb")
        # With --config, kube-scheduler (and so ksched) ignores --kubeconfig: $KUBECONFIG carries it.
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "KUBECONFIG": str(kubeconfig),
        }
        self._argv = [
            "run",
            "--v=2",
            "--config",
            str(config_path),
            f"--leader-elect={str(leader_elect).lower()}",
            "--secure-port=0",
            "--insecure-port=0",
        ]
        command = [sys.executable, "-c", HELD] if held else [sys.executable, "-m", "ksched", *self._argv]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if held else subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            env=env,
        )
        self._port: int | None = None

    def release(self) -> KschedProcess:
        """Run ``ksched run`` in a ``held`` interpreter."""
        assert self.proc.stdin is not None, f"{self.name} was not started held"
        self.proc.stdin.write(json.dumps(self._argv).encode() + b"\n")
        self.proc.stdin.close()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def port(self) -> int:
        if self._port is None:

            def find() -> int | None:
                assert self.proc.poll() is None, f"{self.name} exited early:\n{self.log()}"
                m = re.search(r"serving /metrics.* on http://[^:]+:(\d+)", self.log())
                return int(m.group(1)) if m else None

            self._port = wait_until(find, timeout=30, what=f"{self.name} to serve /metrics")
        return self._port

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of GET http://127.0.0.1:port/path; (0, error) if the server does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read().decode()
        except OSError as exc:
            return 0, str(exc)

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels`` (0 when absent)."""
        _, text = self.get("/metrics")
        return metric_value(text, name, **labels)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self._log.close()


def metric_value(text: str, name: str, **labels: str) -> float:
    total = 0.0
    pattern = re.compile(rf"^{re.escape(name)}(?:{{(.*)}})? (\S+)$")
    for line in text.splitlines():
        m = pattern.match(line)
        if not m:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


def kubectl(kubeconfig: Path, *args: str) -> str:
    """The real ``kubectl`` against the cluster of ``kubeconfig``; its stdout (fails on an error)."""
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


# ---------------------------------------------------------------------------------------------- sim checks
def pods(sim: SimCluster, namespace: str | None = None) -> list[dict[str, Any]]:
    return sim.store.list("pods", namespace)


def bound_count(sim: SimCluster) -> int:
    return sum(1 for p in pods(sim) if (p.get("spec") or {}).get("nodeName"))


def pod(sim: SimCluster, name: str, namespace: str = "default") -> dict[str, Any]:
    obj = sim.store.get("pods", name, namespace)
    assert obj is not None, f"pod {namespace}/{name} does not exist"
    return obj


def node_of(sim: SimCluster, name: str, namespace: str = "default") -> str:
    return str((pod(sim, name, namespace).get("spec") or {}).get("nodeName") or "")


def condition(obj: dict[str, Any], ctype: str = "PodScheduled") -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return dict(c)
    return None


def events_about(sim: SimCluster, name: str, reason: str | None = None) -> list[dict[str, Any]]:
    """events.k8s.io/v1 Events whose ``regarding`` is the pod ``name`` (optionally of one reason)."""
    out = []
    for ev in sim.store.list(EVENTS_V1):
        if (ev.get("regarding") or {}).get("name") == name and (reason is None or ev.get("reason") == reason):
            out.append(ev)
    return out


def assert_bound_exactly_once(sim: SimCluster, expected_pods: int) -> None:
    """Every pod in the store is bound, and the audit log holds exactly one ``bound`` record for each,
    naming the node the pod is on; no pod was bound twice."""
    all_pods = pods(sim)
    assert len(all_pods) == expected_pods
    unbound = [p["metadata"]["name"] for p in all_pods if not (p.get("spec") or {}).get("nodeName")]
    assert not unbound, f"{len(unbound)} pods not bound, e.g. {unbound[:5]}"
    assert sim.audit.double_bindings() == []
    bound = sim.audit.bound()
    for p in all_pods:
        recs = bound.get(p["metadata"]["uid"], [])
        assert len(recs) == 1, f"pod {p['metadata']['name']}: {len(recs)} bound records"
        assert recs[0].node == p["spec"]["nodeName"]


def usage_by_node(sim: SimCluster) -> dict[str, dict[str, int]]:
    """Sum of requests (canonical units, plus a pod count) of the pods bound to each node, from the store."""
    use: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for raw in pods(sim):
        rec = pod_from_dict(raw)
        if not rec.node_name or rec.phase in ("Succeeded", "Failed"):
            continue
        for res, value in rec.requests.items():
            use[rec.node_name][res] += value
        use[rec.node_name]["pods"] += 1
    return use


def assert_no_overcommit(sim: SimCluster) -> dict[str, dict[str, int]]:
    use = usage_by_node(sim)
    nodes = {n["metadata"]["name"]: node_from_dict(n) for n in sim.store.list("nodes")}
    for name, used in use.items():
        assert name in nodes, f"pods bound to unknown node {name}"
        alloc = nodes[name].allocatable
        for res, value in used.items():
            assert value <= alloc.get(res, 0), (
                f"node {name} over-committed on {res}: {value} > {alloc.get(res)}"
            )
    return use


def cache_matches_store(sim: SimCluster) -> Callable[[Scheduler], str]:
    """A probe (run on the scheduling thread): '' when the scheduler's cache agrees with the store —
    same bound pods on the same nodes, nothing assumed, and each node's requested row equal to the sum
    of its pods' requests — else a description of the first difference."""
    raw_pods = [p for p in pods(sim) if (p.get("spec") or {}).get("nodeName")]
    expected = {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in raw_pods}
    use = usage_by_node(sim)

    def check(s: Scheduler) -> str:
        cache = s.cache
        got = {uid: e.node_name for uid, e in cache.pods.items()}
        if got != expected:
            missing = set(expected) - set(got)
            extra = set(got) - set(expected)
            moved = {u for u in set(got) & set(expected) if got[u] != expected[u]}
            return (
                f"cache pods differ: {len(missing)} missing, {len(extra)} extra, {len(moved)} on other nodes"
            )
        if cache.assumed_count:
            return f"{cache.assumed_count} pods still assumed"
        if s.binding:
            return f"{len(s.binding)} bindings still in flight"
        nodes = cache.nodes
        for name, row in nodes.row_of.items():
            for res in ("cpu", "memory"):
                col = cache.resources.column(res)
                want = use.get(name, {}).get(res, 0)
                if int(nodes.requested[row, col]) != want:
                    return f"node {name}: cache requested {res} {int(nodes.requested[row, col])} != {want}"
            count = use.get(name, {}).get("pods", 0)
            if int(nodes.pod_count[row]) != count:
                return f"node {name}: cache pod count {int(nodes.pod_count[row])} != {count}"
        return ""

    return check


def assert_cache_consistent(sched: InProcessScheduler, sim: SimCluster, timeout: float = 10.0) -> None:
    """Wait (the informers may lag) until the cache agrees with the store."""
    last = [""]

    def ok() -> bool:
        last[0] = sched.probe(cache_matches_store(sim))
        return not last[0]

    try:
        wait_until(ok, timeout=timeout, interval=0.1, what="the cache to agree with the store")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last[0]}") from None
