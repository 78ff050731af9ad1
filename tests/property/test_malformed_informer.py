"""Malformed objects through the informer path of a running scheduler: it keeps scheduling.

A module-wide embedded cluster (5 good nodes) and an in-process scheduler (the production wiring,
``sched_harness.InProcessScheduler``) receive, per hypothesis example, a batch of mutated Pods, Nodes,
Namespaces and PodDisruptionBudgets (strategies of ``test_malformed_objects``: invalid quantities,
2^63 values, unicode, missing fields, wrong types), some pods nominated to nodes other pods are
nominated to, or to nodes that do not exist, next to three good pods. Then:

- the scheduling loop is still running (a probe on its thread answers);
- the good pods are bound;
- every pending pod of ours that the decoder rejects has a FailedScheduling event and a
  ``PodScheduled=False`` condition whose message is the decoder's error (kind, namespace/name, field).

Objects the embedded API server itself refuses never reach the informer and are skipped; a pod whose
stored conditions the server cannot merge a patch into only needs the event.
Batches: 8 examples by default (CI); with ``HYPOTHESIS_PROFILE=full``, 400 batches of at least 3
objects of every kind, so each kind gets at least 1,200 mutated objects through the informer path.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_malformed_objects import (
    FULL,
    PROFILE,
    base_namespace,
    base_node,
    base_pdb,
    base_pod,
    mutated,
)

from ksched.errors import ObjectError
from ksched.model.pod import pod_from_dict
from ksched.sim import SimCluster, SimConfig
from ksched.sim.workloads import pod_template
from tests.integration.scheduler.sched_harness import InProcessScheduler, write_config
from tests.integration.support import wait_until

BATCHES = settings(PROFILE, max_examples=400 if FULL else 8)
_AT_LEAST = 3 if FULL else 0
"""Objects of every kind per batch in the full run (400 x 3 >= 1,000 per kind)."""
_ids = itertools.count()
NODES = [f"node-{i}" for i in range(5)]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, InProcessScheduler]]:
    tmp: Path = tmp_path_factory.mktemp("malformed")
    sim = SimCluster(SimConfig(running_delay_s=0.0, grace_scale=0.0, bookmark_interval_s=0.5, seed=5))
    sim.add_nodes(5)
    sim.start()
    sched = None
    try:
        kubeconfig = sim.write_kubeconfig(tmp / "kubeconfig")
        sched = InProcessScheduler(kubeconfig, write_config(tmp / "ksched.yaml")).start()
        yield sim, sched
    finally:
        if sched is not None:
            sched.stop()
        sim.stop()


def _message(pod: dict[str, Any]) -> str:
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or "")
    return ""


def _conditions_patchable(pod: dict[str, Any]) -> bool:
    """Whether a strategic merge patch of ``status.conditions`` can apply: the embedded API server
    answers 500 when an existing condition's ``type`` is not a scalar (a real API server never
    stores such a pod: validation rejects it at creation)."""
    status = pod.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return True
    scalar = str | int | float | bool | None
    return all(not isinstance(c, dict) or isinstance(c.get("type"), scalar) for c in conditions)


def _ours_and_pending(raw: dict[str, Any]) -> bool:
    spec = raw.get("spec") if isinstance(raw.get("spec"), dict) else {}
    name = spec.get("schedulerName")
    ours = not isinstance(name, str) or name in ("", "default-scheduler")
    return ours and not isinstance(spec.get("nodeName"), str)


def _create(sim: SimCluster, resource: str, obj: dict[str, Any], namespace: str = "") -> bool:
    try:
        sim.store.create(resource, obj, namespace=namespace)
    except Exception:  # refused by the embedded API server: it never reaches the informer
        return False
    return True


@BATCHES
@given(
    pods=st.lists(mutated(base_pod("x"), "x"), min_size=4, max_size=12),
    nodes=st.lists(mutated(base_node("x"), "x"), min_size=_AT_LEAST, max_size=max(3, _AT_LEAST)),
    namespaces=st.lists(mutated(base_namespace("x"), "x"), min_size=_AT_LEAST, max_size=max(2, _AT_LEAST)),
    pdbs=st.lists(mutated(base_pdb("x"), "x"), min_size=_AT_LEAST, max_size=max(2, _AT_LEAST)),
    nominated=st.lists(st.sampled_from([*NODES, "gone", "bad-n0"]), min_size=3, max_size=3),
)
def test_malformed_objects_through_the_informer(
    running: tuple[SimCluster, InProcessScheduler],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    namespaces: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    nominated: list[str],
) -> None:
    sim, sched = running
    batch = next(_ids)
    for i, node in enumerate(nodes):
        node["metadata"]["name"] = f"bad-n{batch}-{i}"
        _create(sim, "nodes", node)
    for i, ns in enumerate(namespaces):
        ns["metadata"]["name"] = f"bad-ns{batch}-{i}"
        _create(sim, "namespaces", ns)
    for i, pdb in enumerate(pdbs):
        pdb["metadata"]["name"] = f"bad-pdb{batch}-{i}"
        _create(sim, "poddisruptionbudgets", pdb, "default")
    expect_error: dict[str, str] = {}
    for i, pod in enumerate(pods):
        name = f"bad-p{batch}-{i}"
        pod["metadata"]["name"] = name
        if isinstance(pod.get("status"), dict):  # nominations that point at each other's nodes
            pod["status"]["nominatedNodeName"] = nominated[i % len(nominated)]
        if not _create(sim, "pods", pod, "default"):
            continue
        stored = sim.store.get("pods", name, "default")
        assert stored is not None
        try:
            pod_from_dict(stored)
        except ObjectError as exc:
            if _ours_and_pending(stored):
                expect_error[name] = str(exc)
    good = []
    for i in range(3):
        tpl = pod_template(cpu="10m", memory="10Mi")
        tpl["metadata"]["name"] = f"good-{batch}-{i}"
        tpl.setdefault("status", {})["nominatedNodeName"] = nominated[i]
        sim.store.create("pods", tpl, namespace="default")
        good.append(tpl["metadata"]["name"])

    def unreported() -> dict[str, tuple[str, str, str]]:
        """Bad pods still lacking their error in the condition or in a FailedScheduling event."""
        events = {
            (ev.get("involvedObject") or {}).get("name"): str(ev.get("message", ""))
            for ev in sim.store.list("events", "default")
            if ev.get("reason") == "FailedScheduling"
        }
        out = {}
        for name, error in expect_error.items():
            p = sim.store.get("pods", name, "default") or {}
            try:
                pod_from_dict(p)
                continue  # our own status patch replaced the bad status.conditions: a valid pod now
            except ObjectError:
                pass
            condition_ok = error in _message(p) or not _conditions_patchable(p)
            if not condition_ok or error[:200] not in events.get(name, ""):
                out[name] = (error, _message(p), events.get(name, "<no FailedScheduling event>"))
        return out

    def settled() -> bool:
        for name in good:
            p = sim.store.get("pods", name, "default") or {}
            if not (p.get("spec") or {}).get("nodeName"):
                return False
        return not unreported()

    try:
        wait_until(settled, timeout_s=30, interval_s=0.05, what="good pods bound, bad pods reported")
    except AssertionError as exc:
        missing = unreported()
        raise AssertionError(f"{exc}; bad pods not reported (error, condition, event): {missing}") from None
    assert sched.probe(lambda s: True), "the scheduling loop stopped"
