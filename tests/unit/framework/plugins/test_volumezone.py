"""VolumeZone, ported from upstream ``volumezone/volume_zone_test.go``: TestSingleZone (14 cases),
TestMultiZone (5), TestWithBinding (6) and the three queueing-hint tables, plus a vectorized run
over many nodes and one through the framework.

As upstream's tests do, Filter runs after PreFilter whatever PreFilter said: without PreFilter's
state it works the topology out again (and fails every node with PreFilter's status).
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework.interface import Code, CycleState, QueueingHint
from ksched.framework.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone, hints
from ksched.framework.profile import build_profiles
from ksched.model.pod import pod_from_dict
from ksched.model.storage import pv_from_dict, pvc_from_dict, storage_class_from_dict
from ksched.scheduler.events_registry import DEFAULT_PLUGIN_EVENTS, events_of_plugin
from tests.builders import (
    claim_volume,
    cluster_of,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    store_objects,
)

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
CONFLICT = (UU, ERR_REASON_CONFLICT)
SKIPPED = (Code.SKIP, "")


def pod_with(claim: str | None) -> dict[str, Any]:
    return make_pod("pod_1", volumes=[claim_volume(claim)] if claim else [])


SINGLE_ZONE = [
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    make_pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    make_pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    make_pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    make_pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    make_pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    make_pvc("PVC_1", volume_name="Vol_1"),
    make_pvc("PVC_2", volume_name="Vol_2"),
    make_pvc("PVC_3", volume_name="Vol_3"),
    make_pvc("PVC_4", volume_name="Vol_not_exist"),
    make_pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    make_pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
    make_pvc("PVC_Stable_3", volume_name="Vol_Stable_3"),
]
MULTI_ZONE = [
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    make_pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    make_pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    make_pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    make_pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
    make_pvc("PVC_1", volume_name="Vol_1"),
    make_pvc("PVC_2", volume_name="Vol_2"),
    make_pvc("PVC_3", volume_name="Vol_3"),
    make_pvc("PVC_4", volume_name="Vol_not_exist"),
    make_pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    make_pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
]
WITH_BINDING = [
    make_storage_class("Class_Immediate"),
    make_storage_class("Class_Wait", binding_mode="WaitForFirstConsumer"),
    make_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    make_pvc("PVC_1", volume_name="Vol_1"),
    make_pvc("PVC_NoSC", storage_class="Class_0"),
    make_pvc("PVC_EmptySC"),
    make_pvc("PVC_WaitSC", storage_class="Class_Wait"),
    make_pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
BINDING_NODE = {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}


def run(objects: list[dict[str, Any]], claim: str | None, labels: dict[str, str]) -> tuple[Any, Any]:
    """(PreFilter's (code, message) or None, Filter's (code, message) or None) on one node."""
    cluster = store_objects(cluster_of([make_node("host1", labels=labels)]), objects)
    plugin = VolumeZone()
    pod = pod_from_dict(pod_with(claim))
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cluster)
    pre = None if status.ok else (status.code, status.message)
    reasons, code = plugin.filter(state, pod, cluster).reasons_at(0)
    return pre, (code, ", ".join(reasons)) if reasons else None


SINGLE = [
    ("pod without volume", None, {BETA_ZONE: "us-west1-a"}, SKIPPED, None),
    ("node without labels", "PVC_1", {}, None, None),
    ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, None, None),
    (
        "beta region label doesn't match",
        "PVC_2",
        {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
    (
        "beta zone label doesn't match",
        "PVC_1",
        {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, None, None),
    (
        "region label doesn't match",
        "PVC_Stable_2",
        {REGION: "no_us-west1", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
    (
        "zone label doesn't match",
        "PVC_Stable_1",
        {ZONE: "no_us-west1-a", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
    ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, None, CONFLICT),
    ("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, None, CONFLICT),
    ("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None, None),
    ("pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, None, CONFLICT),
]
MULTI = [
    ("node without labels", "PVC_3", {}, None, None),
    ("beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    (
        "beta zone label doesn't match",
        "PVC_1",
        {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
    ("zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    (
        "zone label doesn't match",
        "PVC_Stable_1",
        {ZONE: "us-west1-b", "uselessLabel": "none"},
        None,
        CONFLICT,
    ),
]
NO_NAMES = (UU, "PersistentVolumeClaim had no pv name and storageClass name")
NO_CLASS = (UU, 'storageclass.storage.k8s.io "Class_0" not found')
NO_MODE = (UU, 'VolumeBindingMode not set for StorageClass "Class_Immediate"')
BINDING = [
    ("label zone failure domain matched", "PVC_1", BINDING_NODE, None, None),
    ("unbound volume empty storage class", "PVC_EmptySC", BINDING_NODE, NO_NAMES, NO_NAMES),
    ("unbound volume no storage class", "PVC_NoSC", BINDING_NODE, NO_CLASS, NO_CLASS),
    ("unbound volume immediate binding mode", "PVC_ImmediateSC", BINDING_NODE, NO_MODE, NO_MODE),
    ("unbound volume wait binding mode", "PVC_WaitSC", BINDING_NODE, SKIPPED, None),
]
CASES = (
    [pytest.param(SINGLE_ZONE, *c[1:], id=f"single zone: {c[0]}") for c in SINGLE]
    + [pytest.param(MULTI_ZONE, *c[1:], id=f"multi zone: {c[0]}") for c in MULTI]
    + [pytest.param(WITH_BINDING, *c[1:], id=f"with binding: {c[0]}") for c in BINDING]
)


@pytest.mark.parametrize(("objects", "claim", "labels", "want_pre", "want_filter"), CASES)
def test_volume_zone(
    objects: list[dict[str, Any]], claim: str | None, labels: dict[str, str], want_pre: Any, want_filter: Any
) -> None:
    assert run(objects, claim, labels) == (want_pre, want_filter)


def test_missing_claim_and_pv() -> None:
    assert run(SINGLE_ZONE, "PVC_9", {})[0] == (UU, 'persistentvolumeclaim "PVC_9" not found')
    assert run(SINGLE_ZONE, "PVC_4", {})[0] == (UU, 'persistentvolume "Vol_not_exist" not found')


def test_malformed_pv_is_reported() -> None:
    cluster = store_objects(cluster_of([make_node("host1")]), SINGLE_ZONE)
    cluster.volumes.problems[("persistentvolumes", "Vol_not_exist")] = (
        "PersistentVolume Vol_not_exist: spec: bad"
    )
    _, status = VolumeZone().pre_filter(CycleState(), pod_from_dict(pod_with("PVC_4")), cluster)
    assert (status.code, status.message) == (UU, "PersistentVolume Vol_not_exist: spec: bad")


def test_every_node_at_once() -> None:
    zones = ["us-west1-a", "us-west1-b", "us-west1-c"]
    nodes = [make_node(f"n{i}", labels={ZONE: zones[i % 3]} if i % 4 else {}) for i in range(24)]
    cluster = store_objects(cluster_of(nodes), MULTI_ZONE)
    pod = pod_from_dict(pod_with("PVC_Stable_2"))  # us-west1-c or us-west1-a
    state = CycleState()
    VolumeZone().pre_filter(state, pod, cluster)
    result = VolumeZone().filter(state, pod, cluster)
    want = [bool(i % 4) and zones[i % 3] == "us-west1-b" for i in range(24)]
    assert [bool(result.reasons_at(r)[0]) for r in range(24)] == want


OTHER_VOLUME_PLUGINS = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding")


def test_through_the_framework() -> None:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"disabled": [{"name": n} for n in OTHER_VOLUME_PLUGINS]}},
            }
        ],
    }
    fw = build_profiles(config_from_dict(doc), seed=1)["default-scheduler"]
    nodes = [
        make_node("a", pods=5, labels={ZONE: "us-west1-a"}),
        make_node("b", pods=5, labels={ZONE: "us-west1-b"}),
    ]
    cluster: ClusterCache = store_objects(cluster_of(nodes), MULTI_ZONE)
    assert fw.schedule_pod(pod_from_dict(pod_with("PVC_Stable_1")), cluster).selected_node == "a"
    assert (
        fw.schedule_pod(pod_from_dict(pod_with("PVC_2")), cluster).selected_node == "b"
    )  # beta PV label, GA node
    cluster.remove_node("a")
    failed = fw.schedule_pod(pod_from_dict(pod_with("PVC_1")), cluster)
    assert failed.message() == "0/1 nodes are available: 1 node(s) had no available volume zone."


# ----------------------------------------------------------------------------------------- hints
PVC_1 = pvc_from_dict(make_pvc("PVC_1", volume_name="Vol_1"))
PVC_HINTS = [
    pytest.param(pod_with("PVC_1"), None, "not-a-pvc", QueueingHint.QUEUE, id="error-wrong-new-object"),
    pytest.param(
        pod_with(None), None, PVC_1, QueueingHint.QUEUE_SKIP, id="pvc-was-added-but-pod-refers-no-pvc"
    ),
    pytest.param(
        pod_with("PVC_2"),
        None,
        PVC_1,
        QueueingHint.QUEUE_SKIP,
        id="pvc-was-added-and-pod-was-bound-to-different-pvc",
    ),
    pytest.param(
        pod_with("PVC_1"),
        None,
        pvc_from_dict(make_pvc("PVC_1", namespace="ns1", volume_name="Vol_1")),
        QueueingHint.QUEUE_SKIP,
        id="pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
    ),
    pytest.param(
        pod_with("PVC_1"), None, PVC_1, QueueingHint.QUEUE, id="pvc-was-added-and-pod-was-bound-to-the-pvc"
    ),
    pytest.param(
        pod_with("PVC_1"),
        pvc_from_dict(make_pvc("PVC_1")),
        PVC_1,
        QueueingHint.QUEUE,
        id="pvc-was-updated-and-pod-was-bound-to-the-pvc",
    ),
    pytest.param(
        pod_with(None),
        pvc_from_dict(make_pvc("PVC_1")),
        PVC_1,
        QueueingHint.QUEUE_SKIP,
        id="pvc-was-updated-but-pod-refers-no-pvc",
    ),
]


@pytest.mark.parametrize(("pod", "old", "new", "want"), PVC_HINTS)
def test_hint_after_claim_change(pod: dict[str, Any], old: object, new: object, want: QueueingHint) -> None:
    assert hints.after_claim_change(pod_from_dict(pod), old, new) == want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param("not-a-storageclass", QueueingHint.QUEUE, id="error-wrong-new-object"),
        pytest.param(
            storage_class_from_dict(make_storage_class("SC_1")),
            QueueingHint.QUEUE_SKIP,
            id="sc-doesn't-have-volume-binding-mode",
        ),
        pytest.param(
            storage_class_from_dict(make_storage_class("SC_1", binding_mode="WaitForFirstConsumer")),
            QueueingHint.QUEUE,
            id="new-sc-is-wait-for-first-consumer-mode",
        ),
    ],
)
def test_hint_after_storage_class_added(new: object, want: QueueingHint) -> None:
    assert hints.after_storage_class_added(pod_from_dict(pod_with("PVC_1")), None, new) == want


def _pv(labels: dict[str, str]) -> object:
    return pv_from_dict(make_pv("Vol_1", labels=labels))


PV_HINTS = [
    pytest.param(None, "not-a-pv", QueueingHint.QUEUE, id="error-wrong-new-object"),
    pytest.param("not-a-pv", _pv({}), QueueingHint.QUEUE, id="error-wrong-old-object"),
    pytest.param(None, _pv({BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE, id="new-pv-was-added"),
    pytest.param(
        _pv({BETA_ZONE: "us-west1-a"}),
        _pv({BETA_ZONE: "us-west1-b"}),
        QueueingHint.QUEUE,
        id="pv-was-updated-and-changed-topology",
    ),
    pytest.param(
        _pv({BETA_ZONE: "us-west1-a"}),
        _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
        QueueingHint.QUEUE,
        id="pv-was-updated-and-added-topology-label",
    ),
    pytest.param(
        _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
        _pv({BETA_ZONE: "us-west1-a", ZONE: "zone"}),
        QueueingHint.QUEUE_SKIP,
        id="pv-was-updated-but-no-topology-is-changed",
    ),
]


@pytest.mark.parametrize(("old", "new", "want"), PV_HINTS)
def test_hint_after_volume_change(old: object, new: object, want: QueueingHint) -> None:
    assert hints.after_volume_change(pod_from_dict(pod_with("PVC_1")), old, new) == want


def test_events_are_the_hints_keys() -> None:
    plugin = VolumeZone()
    assert plugin.events_to_register() == list(plugin.queueing_hints())
    assert events_of_plugin(plugin) == DEFAULT_PLUGIN_EVENTS[plugin.name]
