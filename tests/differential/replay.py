"""Replaying a workload through the scheduler into a :class:`Recording`.

The order is fixed: the initial cluster (nodes, running pods, budgets) then one settle; then for
each wave, the fake clock moves by the wave's ``after_s``, its nodes join, its completed pods go,
its pods arrive, and the loop settles again. Ties between equally good nodes are broken by the
profile's rng seeded with :data:`TIE_BREAK_SEED`, so one (size, seed) always gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ksched.scheduler.inbox import Inbox
from tests.differential import wiring
from tests.differential.cluster import SimulatedCluster
from tests.differential.recording import Recording
from tests.differential.workload import SIZES, digest, generate
from tests.unit.scheduler.loop_support import FakeClock

WORKLOAD_SEED: Final = 20240117
TIE_BREAK_SEED: Final = 17
GOLDEN_DIR: Final = Path(__file__).resolve().parent / "golden"


def golden_path(size: str) -> Path:
    return GOLDEN_DIR / f"{size}.json.gz"


def replay(
    size: str, *, seed: int = WORKLOAD_SEED, tie_break_seed: int = TIE_BREAK_SEED, batching: bool = True
) -> Recording:
    """The decisions the scheduler makes on the ``size`` workload drawn from ``seed`` (``batching``:
    the ``OpportunisticBatching`` gate)."""
    workload = generate(SIZES[size], seed)
    recording = Recording(workload={"size": size, "seed": seed, "digest": digest(workload)})
    clock = FakeClock()
    inbox = Inbox()
    cluster = SimulatedCluster(clock=clock, deliver=inbox.put, recording=recording)
    loop = wiring.build(seed=tie_break_seed, clock=clock, outbox=cluster, inbox=inbox, batching=batching)
    for raw in workload.nodes:
        cluster.add_node(raw)
    for raw in workload.running:
        cluster.add_pod(raw)
    for raw in workload.pdbs:
        cluster.add_pdb(raw)
    loop.settle()
    for wave in workload.waves:
        clock.t += wave.after_s
        for raw in wave.nodes:
            cluster.add_node(raw)
        for key in wave.completed:
            cluster.delete_pod_named(key)
        for raw in wave.pods:
            cluster.add_pod(raw)
        loop.settle()
    return recording
