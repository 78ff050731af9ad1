"""Fault injection and the binding audit log.

A :class:`FaultConfig` is plain JSON-able data, so the same document comes from ``--faults`` on the
command line, ``PUT /admin/faults`` at run time, or Python::

    {
      "seed": 7,
      "latency":  [{"verb": "create", "resource": "pods/binding", "ms": 5, "jitter_ms": 2},
                   {"verb": "*", "resource": "*", "ms": 100, "rate": 0.01}],   # a 100 ms spike on 1%
      "errors":   [{"verb": "*", "resource": "pods", "code": 429, "rate": 0.05, "retry_after_s": 1},
                   {"verb": "list", "resource": "*", "code": 503, "rate": 0.01},
                   {"verb": "create", "resource": "persistentvolumes", "code": 500, "rate": 0.5,
                    "user_agent": "ksched-sim-storage-controllers/"}],  # only the provisioner's creates
      "watch_drop_every": 0,      # close each watch stream after this many events (0: never)
      "watch_drop_rate": 0.0,     # or with this probability per event sent
      "binding_conflict_rate": 0.0, # refuse this fraction of valid bindings with 409
      "partitions": [{"user_agent": "host_5f0c", "mode": "blackhole"}]  # cut one client off
    }

``verb`` is one of list, watch, get, create, update, patch, delete (or ``*``); ``resource`` is a
plural, optionally with a subresource (``pods/binding``), or ``*``. A rule's optional ``user_agent``
is a substring the request's ``User-Agent`` header must contain, so a rule can single out one client:
``"ksched/"`` for the scheduler, ``"ksched-sim-storage-controllers/"`` for the storage controller
stand-ins (empty, the default: every client). All randomness comes from one ``random.Random(seed)``
so a run can be replayed (given the same request order).

A :class:`PartitionRule` cuts one client off the server, as a network partition would: every
request whose ``User-Agent`` contains its ``user_agent`` (or that carries its bearer ``token``) is
refused at once (``refuse``: an HTTP error, 503 by default, without Retry-After), dropped with the
connection (``reset``), or held unanswered and unapplied (``blackhole``) until the rule is lifted,
when its connection is closed, still unapplied. Watch streams of a partitioned client are cut
(``blackhole``: go silent until the rule is lifted, then cut). Partitions can be replaced on their
own (:meth:`FaultInjector.set_partitions`, ``PUT /admin/partitions``) without reseeding the rest.

The :class:`AuditLog` records every binding the server accepted or refused, with a sequence number,
so tests can prove that no pod was bound twice. :attr:`FaultInjector.counts` tallies what was injected
(``latency``, ``error-<code>``, ``binding-conflict``, ``watch-drop``), so a reliability run can report
how many faults it survived.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import orjson

from ksched.sim._clock import Clock, SystemClock

VERBS = ("list", "watch", "get", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyRule:
    verb: str = "*"
    resource: str = "*"
    ms: float = 0.0
    """Added before the request is handled, in milliseconds."""
    jitter_ms: float = 0.0
    """Uniform extra delay in [0, jitter_ms)."""
    rate: float = 1.0
    """Probability per matching request (below 1: occasional latency spikes rather than a steady delay)."""
    user_agent: str = ""
    """Only requests whose ``User-Agent`` contains this text match; empty matches every client."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorRule:
    verb: str = "*"
    resource: str = "*"
    code: int = 500
    """429, 500 or 503 (any 4xx/5xx is accepted)."""
    rate: float = 0.0
    """Probability per matching request, 0..1."""
    retry_after_s: int = 1
    """Retry-After header value sent with 429 and 503."""
    user_agent: str = ""
    """Only requests whose ``User-Agent`` contains this text match; empty matches every client."""


PARTITION_MODES = ("refuse", "reset", "blackhole")


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRule:
    """One client cut off from the server (see the module docstring); equal rules are one partition."""

    user_agent: str = ""
    """Requests whose ``User-Agent`` contains this text are cut off (empty: any agent)."""
    token: str = ""
    """Requests carrying ``Authorization: Bearer <token>`` are cut off (empty: any credential)."""
    mode: str = "refuse"
    """``refuse``, ``reset`` or ``blackhole``."""
    code: int = 503
    """The status a ``refuse`` answers with."""

    def matches(self, user_agent: str, authorization: str) -> bool:
        if self.user_agent and self.user_agent not in user_agent:
            return False
        return not self.token or authorization == f"Bearer {self.token}"

    def check(self, where: str) -> None:
        """Raise ValueError naming ``where`` when the rule is not usable."""
        if not (self.user_agent or self.token):
            raise ValueError(f"{where}: set user_agent or token (a partition of every client is not one)")
        if self.mode not in PARTITION_MODES:
            raise ValueError(f"{where}.mode: {self.mode!r} is not one of {', '.join(PARTITION_MODES)}")
        if not 400 <= self.code <= 599:
            raise ValueError(f"{where}.code: {self.code!r} not an HTTP error code")


def partitions_from_list(items: Any, where: str = "faults.partitions") -> tuple[PartitionRule, ...]:
    """Partition rules from JSON (a list of objects); ValueError naming the bad entry otherwise."""
    if not isinstance(items, list | tuple):
        raise ValueError(f"{where}: expected a list of partition rules, got {type(items).__name__}")
    rules = []
    for i, item in enumerate(items):
        try:
            rule = PartitionRule(**item)
        except TypeError as exc:
            raise ValueError(f"{where}[{i}]: bad rule: {exc}") from exc
        rule.check(f"{where}[{i}]")
        rules.append(rule)
    return tuple(rules)


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultConfig:
    """Everything the injector can do; the default injects nothing."""

    seed: int = 0
    latency: tuple[LatencyRule, ...] = ()
    errors: tuple[ErrorRule, ...] = ()
    watch_drop_every: int = 0
    watch_drop_rate: float = 0.0
    binding_conflict_rate: float = 0.0
    partitions: tuple[PartitionRule, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultConfig:
        """Build from JSON; unknown keys and out-of-range values raise ValueError naming the field."""
        known = {
            "seed",
            "latency",
            "errors",
            "watch_drop_every",
            "watch_drop_rate",
            "binding_conflict_rate",
            "partitions",
        }
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"faults: unknown keys {sorted(unknown)}; known: {sorted(known)}")
        try:
            latency = tuple(LatencyRule(**r) for r in data.get("latency", ()))
            errors = tuple(ErrorRule(**r) for r in data.get("errors", ()))
        except TypeError as exc:
            raise ValueError(f"faults: bad rule: {exc}") from exc
        for i, lat in enumerate(latency):
            if not 0.0 <= lat.rate <= 1.0:
                raise ValueError(f"faults.latency[{i}].rate: {lat.rate!r} not in [0, 1]")
        for i, e in enumerate(errors):
            if not 0.0 <= e.rate <= 1.0:
                raise ValueError(f"faults.errors[{i}].rate: {e.rate!r} not in [0, 1]")
            if not 400 <= e.code <= 599:
                raise ValueError(f"faults.errors[{i}].code: {e.code!r} not an HTTP error code")
        cfg = cls(
            seed=int(data.get("seed", 0)),
            latency=latency,
            errors=errors,
            watch_drop_every=int(data.get("watch_drop_every", 0)),
            watch_drop_rate=float(data.get("watch_drop_rate", 0.0)),
            binding_conflict_rate=float(data.get("binding_conflict_rate", 0.0)),
            partitions=partitions_from_list(data.get("partitions", [])),
        )
        for name in ("watch_drop_rate", "binding_conflict_rate"):
            if not 0.0 <= getattr(cfg, name) <= 1.0:
                raise ValueError(f"faults.{name}: {getattr(cfg, name)!r} not in [0, 1]")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["latency"] = [asdict(r) for r in self.latency]
        d["errors"] = [asdict(r) for r in self.errors]
        d["partitions"] = [asdict(r) for r in self.partitions]
        return d


def _match(rule: LatencyRule | ErrorRule, verb: str, resource: str, user_agent: str) -> bool:
    return (
        rule.verb in ("*", verb)
        and rule.resource in ("*", resource)
        and (not rule.user_agent or rule.user_agent in user_agent)
    )


def _injects(c: FaultConfig) -> bool:
    """Whether ``c`` injects anything (asked once per configuration, not per request)."""
    return bool(
        c.latency
        or c.errors
        or c.watch_drop_every
        or c.watch_drop_rate
        or c.binding_conflict_rate
        or c.partitions
    )


class FaultInjector:
    """Decides, per request, the delay and the injected error (if any). Thread-safe."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        """Faults injected so far, by kind; survives :meth:`configure`."""
        self.configure(config or FaultConfig())

    def configure(self, config: FaultConfig) -> None:
        """Replace the configuration and reseed the random generator."""
        with self._lock:
            self.config = config
            self._rng = random.Random(config.seed)
            self._active = _injects(config)

    def set_partitions(self, partitions: tuple[PartitionRule, ...]) -> None:
        """Replace only the partitions: the random generator and the other rules carry on."""
        with self._lock:
            self.config = replace(self.config, partitions=partitions)
            self._active = _injects(self.config)

    def partition(self, user_agent: str, authorization: str) -> PartitionRule | None:
        """The partition this client is behind, if any (first match)."""
        for rule in self.config.partitions:
            if rule.matches(user_agent, authorization):
                return rule
        return None

    def holds(self, rule: PartitionRule) -> bool:
        """Whether ``rule`` (or an equal one) is still in force."""
        return rule in self.config.partitions

    def count(self, kind: str) -> None:
        """Tally an injected fault decided elsewhere (a partition's refusal or cut)."""
        with self._lock:
            self.counts[kind] += 1

    @property
    def active(self) -> bool:
        """Whether anything is injected (computed by :meth:`configure`: it is asked on every request)."""
        return self._active

    def delay_s(self, verb: str, resource: str, user_agent: str = "") -> float:
        """Seconds to wait before handling a request from ``user_agent`` (0.0: none)."""
        total = 0.0
        with self._lock:
            for r in self.config.latency:
                if not _match(r, verb, resource, user_agent):
                    continue
                if r.rate < 1.0 and self._rng.random() >= r.rate:
                    continue
                total += r.ms + (self._rng.random() * r.jitter_ms if r.jitter_ms else 0.0)
            if total > 0:
                self.counts["latency"] += 1
        return total / 1000.0

    def error(self, verb: str, resource: str, user_agent: str = "") -> ErrorRule | None:
        """The rule whose error answers this request instead of the server, if one fires."""
        with self._lock:
            for r in self.config.errors:
                if _match(r, verb, resource, user_agent) and self._rng.random() < r.rate:
                    self.counts[f"error-{r.code}"] += 1
                    return r
        return None

    def conflict_binding(self) -> bool:
        rate = self.config.binding_conflict_rate
        if rate <= 0.0:
            return False
        with self._lock:
            hit = self._rng.random() < rate
            if hit:
                self.counts["binding-conflict"] += 1
            return hit

    def drop_watch(self, sent: int) -> bool:
        """Whether to close a watch stream after it has sent ``sent`` events."""
        c = self.config
        with self._lock:
            hit = bool(c.watch_drop_every and sent and sent % c.watch_drop_every == 0)
            if not hit and c.watch_drop_rate > 0.0:
                hit = self._rng.random() < c.watch_drop_rate
            if hit:
                self.counts["watch-drop"] += 1
        return hit


@dataclass(frozen=True, slots=True)
class BindingRecord:
    """One binding request the server decided on."""

    seq: int
    namespace: str
    name: str
    uid: str
    node: str
    result: str
    """``bound``, ``conflict`` (already bound or uid mismatch), ``injected-conflict``, ``not-found``."""
    code: int
    timestamp: float


@dataclass
class AuditLog:
    """Append-only record of bindings; read it from tests via :meth:`records` or ``GET /admin/audit``."""

    clock: Clock = field(default_factory=SystemClock)
    _records: list[BindingRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, namespace: str, name: str, uid: str, node: str, result: str, code: int) -> BindingRecord:
        with self._lock:
            rec = BindingRecord(
                len(self._records) + 1, namespace, name, uid, node, result, code, self.clock.now()
            )
            self._records.append(rec)
            return rec

    def records(self, since_seq: int = 0) -> list[BindingRecord]:
        with self._lock:
            return self._records[since_seq:]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def bound(self) -> dict[str, list[BindingRecord]]:
        """Accepted bindings grouped by pod uid."""
        out: dict[str, list[BindingRecord]] = {}
        for r in self.records():
            if r.result == "bound":
                out.setdefault(r.uid, []).append(r)
        return out

    def double_bindings(self) -> list[list[BindingRecord]]:
        """Pods (by uid) that were bound more than once; must be empty."""
        return [recs for recs in self.bound().values() if len(recs) > 1]

    def to_json(self, since_seq: int = 0) -> dict[str, Any]:
        return orjson.loads(self.to_json_bytes(since_seq))  # type: ignore[no-any-return]

    def to_json_bytes(self, since_seq: int = 0) -> bytes:
        """``{"items": [...]}`` as JSON: orjson encodes the dataclasses natively, far faster
        than ``asdict`` (the bench polls this four times a second while thousands of pods bind)."""
        return orjson.dumps({"items": self.records(since_seq)})
