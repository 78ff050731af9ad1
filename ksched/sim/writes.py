"""The write audit: every write request the embedded API server decided on, in the order decided.

Why: a scheduler replica that lost the leader Lease must not write. A test proves that from the
server's side: each record names the client (its ``User-Agent`` and a digest of its credential),
the request, the outcome and the server's time when the outcome was decided (``timestamp``; and when
its handling began, ``received``, which tells a late client from a busy server), so "nothing from
replica X landed after time T" is one filter over :meth:`WriteAudit.records`.

A write is a POST, PUT, PATCH or DELETE to the Kubernetes API (``/admin`` endpoints are not
recorded). ``path`` is the decoded path, the one the server split to find the object (so a name
arrives as itself: ``tw\\nin``, ``twin?x``); ``raw_path`` is the path as it came on the wire,
percent-escapes and all, without the query. A test that must tell which object a request named
compares the two: ``raw_path``'s segments, each unquoted, are the namespace and name the client
meant, even where a decoded ``/`` makes ``path`` ambiguous.

``code`` is the HTTP status answered, 0 when there was no answer (the connection was
reset or black-holed by a partition, or the client went away first); ``fault`` names the partition
mode that stopped the request before it reached the store (``partition-refuse``,
``partition-reset``, ``partition-blackhole``), empty when the server handled it. Error rules and
injected binding conflicts are not told apart here: their codes say enough, and a check that
counts them as "landed" is only the stricter for it.

The credential is never stored: ``credential`` is the first 12 hex digits of the SHA-256 of the
``Authorization`` header (empty without one). Memory is bounded: the newest ``limit`` records are
kept and :attr:`WriteAudit.dropped` counts the older ones let go.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any

import orjson

from ksched.sim._clock import Clock, SystemClock

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_LIMIT = 100_000
"""Records kept (a few hundred bytes each): enough for a chaos run's tens of thousands of writes."""


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """One write request and what became of it."""

    seq: int
    timestamp: float
    """Store clock (seconds since the epoch) when the outcome was decided."""
    received: float
    """Store clock when the server began handling the request (its headers had arrived)."""
    method: str
    path: str
    user_agent: str
    credential: str
    """SHA-256 prefix of the ``Authorization`` header, or empty."""
    code: int
    """HTTP status answered; 0: no answer."""
    fault: str
    """The partition mode that cut the request off, or empty."""
    raw_path: str = ""
    """The path as sent (percent-encoded), without the query; empty when not known."""

    @property
    def reached_store(self) -> bool:
        """Whether the server handled it (not cut off by a partition): it may have changed state."""
        return not self.fault


def credential_digest(authorization: str) -> str:
    """How a credential is named in the audit (never the credential itself)."""
    if not authorization:
        return ""
    return hashlib.sha256(authorization.encode()).hexdigest()[:12]


class WriteAudit:
    """Append-only, bounded record of write requests; thread-safe."""

    def __init__(self, clock: Clock | None = None, *, limit: int = DEFAULT_LIMIT) -> None:
        self.clock = clock or SystemClock()
        self._records: collections.deque[WriteRecord] = collections.deque(maxlen=limit)
        self._seq = 0
        self._lock = threading.Lock()
        self._digests: dict[str, str] = {}
        self._agents: dict[str, str] = {}
        self.dropped = 0
        """Records let go to stay within ``limit``."""

    def now(self) -> float:
        return self.clock.now()

    def record(
        self,
        method: str,
        path: str,
        user_agent: str,
        authorization: str,
        code: int,
        fault: str = "",
        *,
        received: float | None = None,
        raw_path: str = "",
    ) -> WriteRecord:
        with self._lock:
            digest = self._digests.get(authorization)
            if digest is None:
                if len(self._digests) >= 64:
                    self._digests.clear()
                digest = self._digests[authorization] = credential_digest(authorization)
            if len(self._agents) >= 256:
                self._agents.clear()
            user_agent = self._agents.setdefault(user_agent, user_agent)  # one copy per client
            self._seq += 1
            now = self.clock.now()
            rec = WriteRecord(
                self._seq,
                now,
                now if received is None else received,
                method,
                path,
                user_agent,
                digest,
                code,
                fault,
                raw_path,
            )
            if len(self._records) == self._records.maxlen:
                self.dropped += 1
            self._records.append(rec)
            return rec

    def records(self, since_seq: int = 0) -> list[WriteRecord]:
        """The records after sequence number ``since_seq`` (all of them by default), oldest first."""
        with self._lock:
            if not self._records:
                return []
            start = max(0, since_seq - self._records[0].seq + 1)
            return list(itertools.islice(self._records, start, None))

    def by_agent(self, text: str) -> list[WriteRecord]:
        """The records of every client whose ``User-Agent`` contains ``text``."""
        return [r for r in self.records() if text in r.user_agent]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self.dropped = 0

    def to_json_bytes(self, since_seq: int = 0) -> bytes:
        """``{"items": [...], "dropped": N}`` as JSON (``GET /admin/writes``)."""
        return orjson.dumps({"items": self.records(since_seq), "dropped": self.dropped})

    def to_json(self, since_seq: int = 0) -> dict[str, Any]:
        return orjson.loads(self.to_json_bytes(since_seq))  # type: ignore[no-any-return]
