"""The malformed-input run: hostile objects against the embedded cluster and a real ``ksched run``.

``python -m tests.malformed.run --objects 10000 --seed 1`` starts the embedded cluster (HTTP, in
this process) and ``ksched run`` as a subprocess against it, then for each generated object
(:mod:`tests.malformed.gen`: corpus variants and seeded mutations): POSTs it and checks the answer
(a 4xx naming the field for an invalid one, 201 for a valid one; a 5xx or a dropped connection is an
unhandled exception); then creates a valid probe pod and checks that it is bound within
``--probe-s`` (1 s): after EVERY object, refused ones included. Accepted objects are read back
(their ``PodScheduled`` message) and deleted with the probe, so that the cluster stays small.

At the end it counts, from the sim's own records: pods bound twice (``AuditLog``), writes by the
scheduler to a pod it was not given (``WriteAudit``, by user agent), and the longest condition
message, event note and scheduler log line against :mod:`ksched.model.limits`; and tracebacks in
the scheduler's log. It prints a table and exits 1 on any failure. ``--ready-only`` draws only the
classes the embedded cluster refuses today (the CI test); without it, the classes waiting for the
cluster's validation show up as "accepted but expected refusal".
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ksched.model.limits import CONDITION_MESSAGE_BYTES, LOG_LINE_BYTES, NOTE_BYTES, utf8_len
from ksched.sim import SimCluster, SimConfig
from ksched.sim.workloads import node_template
from tests.malformed import corpus as corpus_mod
from tests.malformed.corpus import ObjectEntry
from tests.malformed.gen import stream

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 5000, burst: 5000}
leaderElection: {leaderElect: false}
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
"""
POD_SUBRESOURCES = ("binding", "status", "eviction", "ephemeralcontainers", "resize")


@dataclass
class Tally:
    """What the run saw; :meth:`failures` says which of it fails the run."""

    sent: int = 0
    accepted: int = 0
    refused: Counter[int] = field(default_factory=Counter)
    by_class: Counter[str] = field(default_factory=Counter)
    accepted_expected_refusal: list[str] = field(default_factory=list)
    wrong_refusal: list[str] = field(default_factory=list)
    unhandled: list[str] = field(default_factory=list)
    probes: int = 0
    late_probes: list[str] = field(default_factory=list)
    slowest_probe_s: float = 0.0
    max_condition: int = 0
    max_note: int = 0
    max_log_line: int = 0
    tracebacks: int = 0
    error_lines: int = 0
    double_bound: int = 0
    wrong_writes: list[str] = field(default_factory=list)
    scheduler_exit: int | None = None

    def failures(self) -> list[str]:
        out = [f"accepted but expected refusal: {x}" for x in self.accepted_expected_refusal]
        out += [f"wrong answer: {x}" for x in self.wrong_refusal]
        out += [f"unhandled exception: {x}" for x in self.unhandled]
        out += [f"probe not bound in time: {x}" for x in self.late_probes]
        out += [f"scheduler wrote to a pod it was not given: {x}" for x in self.wrong_writes]
        if self.double_bound:
            out.append(f"{self.double_bound} pods bound twice")
        if self.tracebacks:
            out.append(f"{self.tracebacks} tracebacks in the scheduler's log")
        if self.scheduler_exit is not None:
            out.append(f"the scheduler exited with {self.scheduler_exit}")
        for what, seen, bound in (
            ("condition message", self.max_condition, CONDITION_MESSAGE_BYTES),
            ("event note", self.max_note, NOTE_BYTES),
            ("log line", self.max_log_line, LOG_LINE_BYTES),
        ):
            if seen > bound:
                out.append(f"a {what} of {seen} bytes (bound {bound})")
        return out


class Api:
    """Plain HTTP to the embedded cluster over one kept-alive connection (reopened when dropped)."""

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def close(self) -> None:
        self.conn.close()

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        """(status, decoded JSON or None); status 0 when the connection dropped."""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            return 0, None
        try:
            return resp.status, json.loads(data) if data else None
        except ValueError:
            return resp.status, None


def check_answer(e: ObjectEntry, code: int, body: Any) -> str | None:
    """Why ``code``/``body`` is the wrong answer to ``e`` (None when right)."""
    if e.accept:
        return None if code == e.code else f"{e.id}: expected {e.code}, got {code} {_message(body)!r}"
    if not 400 <= code < 500 or (e.code is not None and code != e.code):
        return f"{e.id}: expected {e.code or '4xx'}, got {code} {_message(body)!r}"
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return f"{e.id}: a {code} without a Status body"
    if e.field and not names_field(body, e.field):
        return f"{e.id}: the {code} does not name {e.field}: {_message(body)!r}"
    return None


def names_field(status: dict[str, Any], path: str) -> bool:
    causes = (status.get("details") or {}).get("causes") or []
    if any(isinstance(c, dict) and c.get("field") == path for c in causes):
        return True
    return path in str(status.get("message") or "")


def _message(body: Any) -> str:
    return str(body.get("message"))[:200] if isinstance(body, dict) else ""


class Run:
    """One run: the cluster, the scheduler process, the objects sent and what became of them."""

    def __init__(self, tmp: Path, *, nodes: int = 4, probe_s: float = 1.0) -> None:
        self.tmp = tmp
        self.probe_s = probe_s
        self.cluster = SimCluster(SimConfig(seed=1, running_delay_s=0.0, grace_scale=0.0))
        self.cluster.add_nodes(nodes, node_template(cpu="1000", memory="4Ti", pods="100000"))
        self.api = Api(self.cluster.start())
        self.tally = Tally()
        self.ours: set[tuple[str, str]] = set()
        """(namespace, name) of every pod the scheduler was given: probes and accepted pods."""
        self.log_path = tmp / "ksched.log"
        self.proc = self._start_scheduler()
        self._cursor = 0
        self._bound_names: set[str] = set()
        """Names of the pods the binding audit says were bound (read incrementally)."""

    def _start_scheduler(self) -> subprocess.Popen[bytes]:
        kubeconfig = self.cluster.write_kubeconfig(self.tmp / "kubeconfig")
        config = self.tmp / "config.yaml"
        config.write_text(CONFIG)
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        argv = [
            sys.executable,
            "-m",
            "ksched",
            "run",
            "--v=2",
            "--config",
            str(config),
            "--leader-elect=false",
            "--secure-port=0",
            "--insecure-port=0",
        ]
        with self.log_path.open("wb") as log:
            return subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.api.close()
        self.cluster.stop()

    def send(self, e: ObjectEntry) -> dict[str, Any] | None:
        """POST ``e`` and check the answer; the created object when it was accepted."""
        t = self.tally
        t.sent += 1
        t.by_class[e.file] += 1
        code, body = self.api.request("POST", e.path, e.body)
        if code == 0 or code >= 500:
            t.unhandled.append(f"{e.id}: {code or 'connection dropped'} {_message(body)!r}")
            return None
        if 200 <= code < 300:
            t.accepted += 1
            if not e.accept:
                t.accepted_expected_refusal.append(f"{e.id} ({e.file}, expected {e.code or '4xx'} {e.field})")
            elif code != e.code:
                t.wrong_refusal.append(f"{e.id}: expected {e.code}, got {code}")
            return body if isinstance(body, dict) else None
        t.refused[code] += 1
        wrong = check_answer(e, code, body)
        if wrong:
            t.wrong_refusal.append(wrong)
        return None

    def probe(self, n: int, first: bool = False) -> None:
        """A valid pod; it must be bound within ``probe_s`` (the first waits for start-up)."""
        name = f"probe-{n}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        code, _ = self.api.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod).encode())
        if code != 201:
            self.tally.unhandled.append(f"{name}: create answered {code}")
            return
        self.ours.add(("default", name))
        self.tally.probes += 1
        start = time.monotonic()
        limit = 60.0 if first else self.probe_s
        while not self._bound(name):
            if time.monotonic() - start > limit:
                self.tally.late_probes.append(f"{name} not bound after {limit:.1f}s")
                return
            time.sleep(0.002)
        took = time.monotonic() - start
        if not first:
            self.tally.slowest_probe_s = max(self.tally.slowest_probe_s, took)
        self.api.request("DELETE", f"/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=0")

    def _bound(self, name: str) -> bool:
        records = self.cluster.audit.records(self._cursor)
        self._cursor += len(records)
        self._bound_names.update(r.name for r in records if r.result == "bound")
        return name in self._bound_names

    def settle(self, created: dict[str, Any]) -> None:
        """Read an accepted object's condition message, then delete it."""
        meta = created.get("metadata") or {}
        kind, name, ns = created.get("kind"), meta.get("name"), meta.get("namespace") or ""
        if kind != "Pod":
            rtype = corpus_mod.resource_for(str(kind), created)
            base = "/api/v1" if not rtype.group else f"/apis/{rtype.group}/{rtype.version}"
            where = f"/namespaces/{ns}" if rtype.namespaced else ""
            path = f"{base}{where}/{rtype.plural}/{urllib.parse.quote(str(name), safe='')}"
            self.api.request("DELETE", path)
            return
        self.ours.add((ns, str(name)))
        deadline = time.monotonic() + self.probe_s
        while time.monotonic() < deadline:
            pod = self.cluster.store.get("pods", str(name), ns)
            spec = pod.get("spec") if pod is not None else None
            if pod is None or (isinstance(spec, dict) and spec.get("nodeName")) or _condition(pod):
                break
            time.sleep(0.005)
        if pod is not None:
            self.tally.max_condition = max(self.tally.max_condition, utf8_len(_condition(pod)))
        quoted = urllib.parse.quote(str(name), safe="")
        self.api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{quoted}?gracePeriodSeconds=0")

    def finish(self) -> Tally:
        """The counts only the end can give: double bindings, wrong writes, notes and logs."""
        t = self.tally
        time.sleep(0.5)  # the last status patches and events
        t.double_bound = len(self.cluster.audit.double_bindings())
        for rec in self.cluster.writes.by_agent("ksched"):
            target = pod_target(rec.path)
            if target is not None and target not in self.ours:
                t.wrong_writes.append(f"{rec.method} {rec.path!r} ({rec.code})")
        for ev in self._stored("events"):
            t.max_note = max(t.max_note, utf8_len(str(ev.get("message") or ev.get("note") or "")))
        for pod in self._stored("pods"):
            t.max_condition = max(t.max_condition, utf8_len(_condition(pod)))
        if self.proc.poll() is not None:
            t.scheduler_exit = self.proc.returncode
        self.proc.terminate()
        self.proc.wait(30)
        self._read_log()
        return t

    def _stored(self, resource: str) -> list[dict[str, Any]]:
        """The stored objects as they are (not through a list, which hostile ones may break)."""
        store = self.cluster.store
        with store.lock:
            return [e.obj for e in store.table(resource).objects.values() if isinstance(e.obj, dict)]

    def _read_log(self) -> None:
        t = self.tally
        for raw in self.log_path.read_bytes().splitlines():
            t.max_log_line = max(t.max_log_line, len(raw))
            if raw.startswith(b"Traceback"):
                t.tracebacks += 1
            if b" ERROR " in raw:
                t.error_lines += 1


def _condition(pod: dict[str, Any]) -> str:
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "PodScheduled":
            return str(c.get("message") or "")
    return ""


def pod_target(path: str) -> tuple[str, str] | None:
    """(namespace, name) of the pod a write's path names, None for a path that names none."""
    prefix = "/api/v1/namespaces/"
    if not path.startswith(prefix):
        return None
    ns, sep, rest = path[len(prefix) :].partition("/pods/")
    if not sep or "/" in ns:
        return None
    name, _, sub = rest.rpartition("/")
    if not name or sub not in POD_SUBRESOURCES:
        name = rest
    return ns, name


def run(objects: int, seed: int, *, ready_only: bool, probe_s: float = 1.0, out: Any = sys.stdout) -> Tally:
    entries = corpus_mod.objects(corpus_mod.load(), ready_only=ready_only)
    with tempfile.TemporaryDirectory(prefix="ksched-malformed-") as tmp:
        r = Run(Path(tmp), probe_s=probe_s)
        try:
            r.probe(0, first=True)
            started = time.monotonic()
            for i, e in enumerate(itertools.islice(stream(seed, entries, ready_only=ready_only), objects), 1):
                created = r.send(e)
                r.probe(i)
                if created is not None:
                    r.settle(created)
                if i % 1000 == 0:
                    print(f"{i} objects, {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
            tally = r.finish()
        finally:
            r.close()
        print_summary(tally, time.monotonic() - started, out)
    return tally


def print_summary(t: Tally, elapsed: float, out: Any) -> None:
    rows = [
        ("objects sent", t.sent),
        ("accepted", t.accepted),
        *((f"refused {code}", n) for code, n in sorted(t.refused.items())),
        ("accepted but expected refusal", len(t.accepted_expected_refusal)),
        ("wrong answers (code or field)", len(t.wrong_refusal)),
        ("sim 5xx / dropped connections", len(t.unhandled)),
        ("probes bound", t.probes - len(t.late_probes)),
        ("probes late (> bound)", len(t.late_probes)),
        ("slowest probe (s)", f"{t.slowest_probe_s:.3f}"),
        ("scheduler tracebacks", t.tracebacks),
        ("scheduler ERROR lines", t.error_lines),
        ("pods bound twice", t.double_bound),
        ("writes to pods not given", len(t.wrong_writes)),
        (f"max condition message (<= {CONDITION_MESSAGE_BYTES})", t.max_condition),
        (f"max event note (<= {NOTE_BYTES})", t.max_note),
        (f"max log line (<= {LOG_LINE_BYTES})", t.max_log_line),
        ("elapsed (s)", f"{elapsed:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}", file=out)
    print("by class: " + ", ".join(f"{k}={v}" for k, v in sorted(t.by_class.items())), file=out)
    failures = t.failures()
    for f in failures[:50]:
        print(f"FAIL {f}", file=out)
    if len(failures) > 50:
        print(f"... and {len(failures) - 50} more failures", file=out)
    print("RESULT: " + ("FAIL" if failures else "PASS"), file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.malformed.run", description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--ready-only", action="store_true", help="only the classes the embedded cluster refuses today"
    )
    parser.add_argument("--probe-s", type=float, default=1.0, help="how soon a probe pod must be bound")
    args = parser.parse_args(argv)
    tally = run(args.objects, args.seed, ready_only=args.ready_only, probe_s=args.probe_s)
    return 1 if tally.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
