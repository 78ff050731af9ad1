"""Partitioning a ``ksched run`` leader and reading, from the sim's write audit, what it wrote after.

Shared by the fencing test (``test_sched_fencing.py``) and the chaos run (``tests/chaos``).

Each replica names itself in every User-Agent: ``ksched/<version> (<identity>)`` for the scheduler's
client, ``... bind-worker`` for the bind worker child and ``... leader-election`` for the Lease
client, where ``<identity>`` is the Lease holder name the replica logs ("... as <identity>"). So a
partition can cut a replica off whole, or cut only its Lease client (it keeps reaching the API for
everything else: then only the fence stops its writes), and the audit tells each replica's writes
apart.

"Lease expiry as seen by the others": a standby counts leaseDuration from the moment it saw the
holder's last renewal, which is after that renewal landed; :func:`lease_expiry` takes the landing
time from the audit, the earliest moment anyone can have seen it.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass

from ksched.sim import PartitionRule, SimCluster
from ksched.sim.workloads import pod_template
from ksched.sim.writes import WriteRecord

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
SCOPES = ("replica", "lease-client")
"""What a partition cuts off: the whole replica, or only its Lease client."""


def holder(sim: SimCluster) -> str:
    lease = sim.store.get("leases", "kube-scheduler", "kube-system") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def identity_in(log: str) -> str:
    """The Lease identity a replica logs when it starts campaigning ('' before that)."""
    m = re.search(r"waiting to acquire the lease \S+ as (\S+)", log)
    return m.group(1) if m else ""


def partition_rule(identity: str, scope: str, mode: str) -> PartitionRule:
    """A rule cutting off the replica ``identity`` (``scope``: :data:`SCOPES`) in ``mode``."""
    if scope == "replica":
        return PartitionRule(user_agent=f"({identity})", mode=mode)
    if scope == "lease-client":
        return PartitionRule(user_agent=f"({identity}) leader-election", mode=mode)
    raise ValueError(f"scope {scope!r} is not one of {SCOPES}")


def writes_of(sim: SimCluster, identity: str) -> list[WriteRecord]:
    return sim.writes.by_agent(f"({identity})")


def binds_of(sim: SimCluster, identity: str) -> int:
    """Bindings of ``identity`` the server accepted."""
    return sum(1 for w in writes_of(sim, identity) if w.path.endswith("/binding") and w.code == 201)


def last_renewal(sim: SimCluster, identity: str) -> float:
    """When the last Lease write of ``identity`` that the server accepted was decided (0: none)."""
    ok = [
        w.timestamp for w in writes_of(sim, identity) if w.path.startswith(LEASE_PATH) and 200 <= w.code < 300
    ]
    return max(ok, default=0.0)


def lease_expiry(sim: SimCluster, identity: str, lease_s: float) -> float:
    """The earliest moment another replica can consider the Lease of ``identity`` expired."""
    return last_renewal(sim, identity) + lease_s


@dataclass(frozen=True, slots=True)
class Deposition:
    """What the audit says about one deposed leader."""

    identity: str
    writes: int
    """Writes of the replica that reached the store."""
    late: list[WriteRecord]
    """Writes that reached the store at or after its lease expired: must be empty."""
    last_write_after_renewal_s: float
    """From its last accepted renewal to its last write that reached the store."""
    last_received_after_renewal_s: float
    """The same, to the moment the server began handling that write (the rest is the server's own delay)."""
    by_client: dict[str, int]
    """Writes that reached the store per client of the replica (scheduler, bind-worker, leader-election)."""


def client_of(user_agent: str) -> str:
    """``scheduler``, ``bind-worker`` or ``leader-election``: the part after the identity."""
    return user_agent.rpartition(")")[2].strip() or "scheduler"


def deposition(sim: SimCluster, identity: str, lease_s: float) -> Deposition:
    renewed = last_renewal(sim, identity)
    landed = [w for w in writes_of(sim, identity) if w.reached_store]
    late = [w for w in landed if w.timestamp >= renewed + lease_s]
    last = max(landed, key=lambda w: w.timestamp, default=None)
    return Deposition(
        identity,
        len(landed),
        late,
        (last.timestamp if last else renewed) - renewed,
        (last.received if last else renewed) - renewed,
        dict(Counter(client_of(w.user_agent) for w in landed)),
    )


class PodStream:
    """Creates ``per_tick`` small pods every ``tick_s`` from a thread, until :meth:`stop`."""

    def __init__(self, sim: SimCluster, *, per_tick: int, tick_s: float, cpu: str = "10m") -> None:
        self.sim = sim
        self.per_tick = per_tick
        self.tick_s = tick_s
        self.template = pod_template(cpu=cpu, memory="16Mi")
        self.created = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-stream", daemon=True)

    def start(self) -> PodStream:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.sim.add_pods(self.per_tick, self.template, name_prefix="s-", start=self.created)
            self.created += self.per_tick

    def stop(self) -> int:
        """Stop creating; the number of pods created."""
        self._stop.set()
        self._thread.join(5)
        return self.created
