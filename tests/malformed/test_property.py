"""Property: generated malformed objects are refused naming their field; valid-extreme ones are
accepted by the embedded cluster and then handled by the scheduling loop (bound, or reported
Unschedulable within the message bounds) without an error.

The classes are :mod:`tests.malformed.gen`'s, drawn through hypothesis (derandomized, so CI runs
the same examples every time). Only the classes the embedded cluster refuses today are drawn
(``ready``); the others are exercised by the full run, which reports them. The loop runs in-process
with a recording outbox (as in tests/unit/scheduler), fed the object exactly as the API server
stored it; the real ``ksched run`` process is the small run's (test_run_small.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.kube import events as kev
from ksched.model.limits import CONDITION_MESSAGE_BYTES, NOTE_BYTES, utf8_len
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from ksched.scheduler.loop import Scheduler
from ksched.sim import SimCluster, SimConfig
from ksched.sim.workloads import make_nodes, node_template
from tests.malformed import gen
from tests.malformed.corpus import ObjectEntry
from tests.malformed.run import Api, check_answer
from tests.unit.scheduler.loop_support import RecordingOutbox, synced_scheduler

INVALID = [m for m in gen.mutations(ready_only=True) if not m.name.startswith("valid_")]
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    cluster = SimCluster(SimConfig(seed=1, running_delay_s=0.0, grace_scale=0.0))
    client = Api(cluster.start())
    try:
        yield client
    finally:
        client.close()
        cluster.stop()


@pytest.fixture(scope="module")
def loop() -> tuple[Scheduler, RecordingOutbox]:
    sched, outbox = synced_scheduler()
    for raw in make_nodes(4, node_template(cpu="1000", memory="4Ti", pods="100000")):
        sched.inbox.put(kev.Upserted("nodes", node_from_dict(raw)))
    return sched, outbox


def objects(mutations: list[gen.Mutation]) -> st.SearchStrategy[ObjectEntry]:
    return st.builds(
        lambda m, rng, n: m.make(rng, n),
        st.sampled_from(mutations),
        st.randoms(use_true_random=False),
        st.integers(min_value=1, max_value=10**9),
    )


@settings(SETTINGS, max_examples=70)
@given(entry=objects(INVALID))
def test_generated_invalid_objects_are_refused_naming_the_field(api: Api, entry: ObjectEntry) -> None:
    code, body = api.request("POST", entry.path, entry.body)
    assert 400 <= code < 500, f"{entry.id}: {code} {body}"
    assert check_answer(entry, code, body) is None


@settings(SETTINGS, max_examples=30)
@given(entry=objects([m for m in gen.MUTATIONS if m.name == "valid_extreme"]))
def test_valid_extreme_objects_are_accepted_and_handled(
    api: Api, loop: tuple[Scheduler, RecordingOutbox], entry: ObjectEntry, caplog: Any
) -> None:
    code, created = api.request("POST", entry.path, entry.body)
    if code == 409:  # hypothesis replays an example: the object from the first time is there
        return
    assert code == 201, f"{entry.id}: {code} {created}"
    sched, outbox = loop
    pod = pod_from_dict(created)
    seen = len(outbox.events)
    with caplog.at_level(logging.ERROR):
        sched.inbox.put(kev.Upserted("pods", pod))
        sched.run(until=lambda s: any(p.uid == pod.uid for p, _ in outbox.binds) or len(outbox.events) > seen)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]
    if any(p.uid == pod.uid for p, _ in outbox.binds):
        return
    (event,) = outbox.events[seen:]
    assert utf8_len(event["note"]) <= NOTE_BYTES
    (status,) = [p["status"] for name, p in outbox.patches if name == pod.name][-1:]
    (condition,) = status["conditions"]
    assert condition["reason"] == "Unschedulable", condition
    assert utf8_len(condition["message"]) <= CONDITION_MESSAGE_BYTES
