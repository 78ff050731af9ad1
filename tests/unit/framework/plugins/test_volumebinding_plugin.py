"""VolumeBinding as a plugin: upstream volume_binding_test.go's TestVolumeBinding table as data
(PreFilter status, the claims it records, Filter status per node, PreScore), the claim checks of
``podHasPVCs``, malformed objects reported by their problem, the binding-cycle points, the
registered events, and one run through ``Framework.schedule_pod``.

v1.35 differs from the stored upstream table in two ways the rows below follow: PreFilter returns
no PreFilterResult (``all bound with local volumes``), and there is no scoring
(``StorageCapacityScoring`` is off: PreScore skips, so the score columns are not ported).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.config.types import VolumeBindingArgs
from ksched.framework.api import SKIP, Code, CycleState, PendingPreBind, Status
from ksched.framework.handle import Handle, HandleServices
from ksched.framework.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    NAME,
    StateData,
    VolumeBinding,
    new,
)
from ksched.framework.runtime import Framework
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict, with_node_name
from ksched.scheduler.events_registry import DEFAULT_PLUGIN_EVENTS, events_of_plugin
from tests.builders import make_node, make_pod
from tests.storage_builders import (
    add_storage,
    claim_volume,
    ephemeral_volume,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.framework.plugins.volumebinding_support import FakeApi

HOST = "kubernetes.io/hostname"
REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"
UAU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
CLASSES = [
    make_storage_class("immediate-sc", binding_mode="Immediate", provisioner=""),
    make_storage_class("wait-sc", provisioner=""),
    make_storage_class("wait-hdd-sc", provisioner=""),
]


def node(name: str, **labels: str) -> dict[str, Any]:
    """volume_binding_test.go's ``makeNode``: the hostname label is the node's name."""
    return make_node(name, cpu=4, memory="8Gi", pods=10, labels={HOST: name, **labels})


def pvc(name: str, cls: str, *, bound_pv: str = "", request: str | None = None, **kw: Any) -> dict[str, Any]:
    """``makePVC(name, class)`` (``withBoundPV``, ``withRequestStorage``)."""
    return make_pvc(
        name, storage_class=cls, volume_name=bound_pv, bound=bool(bound_pv), request=request, **kw
    )


def pv(name: str, cls: str, *, phase: str | None = None, **kw: Any) -> dict[str, Any]:
    """``makePV(name, class)``: no phase, capacity or access modes unless given."""
    return make_pv(name, storage_class=cls, phase=phase, **kw)


def vb_pod(name: str, *claims: str, ephemeral: Sequence[str] = (), uid: str | None = None) -> Pod:
    volumes = [claim_volume(c, f"vol-{i}") for i, c in enumerate(claims)] + [
        ephemeral_volume(e) for e in ephemeral
    ]
    return pod_from_dict(make_pod(name, uid=uid, volumes=volumes))


def cluster(
    nodes: Sequence[Mapping[str, Any]],
    pvcs: Sequence[Mapping[str, Any]] = (),
    pvs: Sequence[Mapping[str, Any]] = (),
    classes: Sequence[Mapping[str, Any]] = CLASSES,
) -> ClusterCache:
    cache = ClusterCache()
    for n in nodes:
        cache.add_node(node_from_dict(n))
    return add_storage(cache, pvcs=pvcs, pvs=pvs, classes=classes)


def plugin(client: Any = None) -> VolumeBinding:
    handle = Handle("default-scheduler", services=HandleServices(client=client))
    return new(VolumeBindingArgs(bind_timeout_seconds=300), handle)


LOCAL_PVS = [
    pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={HOST: ["node-a"]}),
    pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={HOST: ["node-a"]}),
    pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={HOST: ["node-b"]}),
    pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={HOST: ["node-b"]}),
]
HDD_PVS = [
    pv("pv-a-2", "wait-hdd-sc", phase="Available", capacity="200Gi", affinity={HOST: ["node-a"]}),
    pv("pv-a-3", "wait-hdd-sc", phase="Available", capacity="200Gi", affinity={HOST: ["node-a"]}),
    pv("pv-b-2", "wait-hdd-sc", phase="Available", capacity="100Gi", affinity={HOST: ["node-b"]}),
    pv("pv-b-3", "wait-hdd-sc", phase="Available", capacity="100Gi", affinity={HOST: ["node-b"]}),
]
ZONE_NODES = [
    node(f"zone-{z}-node-{n}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"}) for z in "abc" for n in "ab"
]
ZONE_PVS = [
    pv(
        f"pv-{z}-{i}",
        "wait-sc",
        phase="Available",
        capacity=cap,
        affinity={REGION: [f"region-{z}"], ZONE: [f"zone-{z}"]},
    )
    for z, cap in (("a", "200Gi"), ("b", "100Gi"))
    for i in range(2)
]
NO_PV = [(UAU, [ERR_REASON_BIND_CONFLICT])]


def T(
    pod: Pod,
    nodes: Sequence[Mapping[str, Any]],
    pvcs: Sequence[Mapping[str, Any]] = (),
    pvs: Sequence[Mapping[str, Any]] = (),
    *,
    pre_filter: Status | None = None,
    claims: tuple[list[str], list[str], Mapping[str, list[str]]] | None = None,
    filters: Sequence[tuple[Code, list[str]] | None] | None = None,
    id: str,
) -> Any:
    return pytest.param(pod, nodes, pvcs, pvs, pre_filter, claims, filters, id=id)


VOLUME_BINDING = [
    T(vb_pod("pod-a"), [node("node-a")], pre_filter=SKIP, id="pod has not pvcs"),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        [pv("pv-a", "wait-sc", phase="Available")],
        claims=(["pvc-a"], [], {}),
        filters=[None],
        id="all bound",
    ),
    T(
        vb_pod("pod-a", "pvc-a", "pvc-b"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pvc("pvc-b", "wait-sc", bound_pv="pv-b")],
        [
            pv("pv-a", "wait-sc", phase="Bound", affinity={HOST: ["node-a"]}),
            pv("pv-b", "wait-sc", phase="Bound", affinity={HOST: ["node-a"]}),
        ],
        claims=(["pvc-a", "pvc-b"], [], {}),
        filters=[None],
        id="all bound with local volumes",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        pre_filter=Status(UAU, ('persistentvolumeclaim "pvc-a" not found',)),
        id="PVC does not exist",
    ),
    T(
        vb_pod("pod-a", "pvc-a", "pvc-b"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        pre_filter=Status(UAU, ('persistentvolumeclaim "pvc-b" not found',)),
        id="Part of PVCs do not exist",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        [pvc("pvc-a", "immediate-sc")],
        pre_filter=Status(UAU, (ERR_UNBOUND_IMMEDIATE,)),
        id="immediate claims not bound",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc")],
        claims=([], ["pvc-a"], {"wait-sc": []}),
        filters=NO_PV,
        id="unbound claims no matches",
    ),
    T(
        vb_pod("pod-a", "pvc-a", "pvc-b"),
        [node("node-a", foo="barbar")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pvc("pvc-b", "wait-sc")],
        [pv("pv-a", "wait-sc", phase="Available", affinity={"foo": ["bar"]})],
        claims=(["pvc-a"], ["pvc-b"], {"wait-sc": ["pv-a"]}),
        filters=[(UAU, [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT])],
        id="bound and unbound unsatisfied",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        pre_filter=Status(UAU, ('persistentvolumeclaim "pvc-a" not found',)),
        id="pvc not found",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        claims=(["pvc-a"], [], {}),
        filters=[(UAU, [ERR_REASON_PV_NOT_EXIST])],
        id="pv not found",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        pre_filter=Status(
            UAU, ('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',)
        ),
        id="pv not found claim lost",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        [node("node-a"), node("node-b"), node("node-c")],
        [pvc("pvc-a", "wait-sc", request="50Gi")],
        LOCAL_PVS,
        claims=([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, *NO_PV],
        id="local volumes with close capacity are preferred",
    ),
    T(
        vb_pod("pod-a", "pvc-0", "pvc-1"),
        [node("node-a"), node("node-b"), node("node-c")],
        [pvc("pvc-0", "wait-sc", request="50Gi"), pvc("pvc-1", "wait-hdd-sc", request="100Gi")],
        LOCAL_PVS + HDD_PVS,
        claims=(
            [],
            ["pvc-0", "pvc-1"],
            {
                "wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
                "wait-hdd-sc": ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
            },
        ),
        filters=[None, None, *NO_PV],
        id="local volumes with close capacity are preferred (multiple pvcs)",
    ),
    T(
        vb_pod("pod-a", "pvc-a"),
        ZONE_NODES,
        [pvc("pvc-a", "wait-sc", request="50Gi")],
        ZONE_PVS,
        claims=([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[None, None, None, None, *NO_PV, *NO_PV],
        id="zonal volumes with close capacity are preferred",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pvcs", "pvs", "pre_filter", "claims", "filters"), VOLUME_BINDING)
def test_volume_binding(
    pod: Pod,
    nodes: Sequence[Mapping[str, Any]],
    pvcs: Sequence[Mapping[str, Any]],
    pvs: Sequence[Mapping[str, Any]],
    pre_filter: Status | None,
    claims: tuple[list[str], list[str], Mapping[str, list[str]]] | None,
    filters: Sequence[tuple[Code, list[str]] | None] | None,
) -> None:
    cache = cluster(nodes, pvcs, pvs)
    pl = plugin()
    state = CycleState()
    result, status = pl.pre_filter(state, pod, cache)
    assert result is None  # v1.35 returns no PreFilterResult
    if pre_filter is not None:
        assert status == pre_filter
        return
    assert status.ok
    data = state.read(NAME)
    assert isinstance(data, StateData) and data.claims is not None
    bound, delay, by_class = claims  # type: ignore[misc]
    assert [c.name for c in data.claims.bound] == bound
    assert [c.name for c in data.claims.delay] == delay
    assert {k: sorted(p.name for p in v) for k, v in data.claims.pvs_by_class.items()} == by_class
    fr = pl.filter(state, pod, cache)
    for i, want in enumerate(filters or []):
        reasons, code = fr.reasons_at(cache.nodes.row_of[nodes[i]["metadata"]["name"]])
        assert reasons == [] if want is None else (code, reasons) == want, nodes[i]["metadata"]["name"]
    assert pl.pre_score(state, pod, cache, None) == SKIP


# --------------------------------------------------------------------------- PreFilter's claim checks
NOT_OWNED = make_pvc("pod-a-eph", storage_class="wait-sc", owner_uid="someone-else")


@pytest.mark.parametrize(
    ("pod", "pvcs", "classes", "status"),
    [
        pytest.param(
            vb_pod("pod-a", ephemeral=["eph"]),
            [],
            CLASSES,
            Status(
                UAU,
                ('waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-eph"',),
            ),
            id="generic ephemeral claim not created yet",
        ),
        pytest.param(
            vb_pod("pod-a", ephemeral=["eph"]),
            [NOT_OWNED],
            CLASSES,
            Status(UAU, ("PVC default/pod-a-eph was not created for pod default/pod-a (pod is not owner)",)),
            id="generic ephemeral claim of another owner",
        ),
        pytest.param(
            vb_pod("pod-a", "pvc-a"),
            [make_pvc("pvc-a", storage_class="wait-sc", terminating=True)],
            CLASSES,
            Status(UAU, ('persistentvolumeclaim "pvc-a" is being deleted',)),
            id="claim being deleted",
        ),
        pytest.param(
            vb_pod("pod-a", "pvc-a"),
            [make_pvc("pvc-a", storage_class="no-mode")],
            [make_storage_class("no-mode", binding_mode=None)],
            Status(Code.ERROR, ('VolumeBindingMode not set for StorageClass "no-mode"',)),
            id="class without a binding mode is an error",
        ),
        pytest.param(
            vb_pod("pod-a", "pvc-a"),
            [make_pvc("pvc-a", storage_class="gone")],
            CLASSES,
            Status(UAU, (ERR_UNBOUND_IMMEDIATE,)),
            id="claim of a missing class binds immediately",
        ),
        pytest.param(
            vb_pod("pod-a", "pvc-a"),
            [make_pvc("pvc-a", storage_class="wait-sc", volume_name="pv-a")],
            CLASSES,
            Status(UAU, (ERR_UNBOUND_IMMEDIATE,)),
            id="pre-bound claim counts as immediate",
        ),
    ],
)
def test_pre_filter_claim_checks(
    pod: Pod, pvcs: list[dict[str, Any]], classes: list[dict[str, Any]], status: Status
) -> None:
    cache = cluster([node("node-a")], pvcs, classes=classes)
    assert plugin().pre_filter(CycleState(), pod, cache) == (None, status)


def test_owned_generic_ephemeral_claim_is_accepted() -> None:
    pod = vb_pod("pod-a", ephemeral=["eph"], uid="pod-uid")
    cache = cluster([node("node-a")], [make_pvc("pod-a-eph", storage_class="wait-sc", owner_uid="pod-uid")])
    state = CycleState()
    assert plugin().pre_filter(state, pod, cache)[1].ok
    assert [c.name for c in state.read(NAME).claims.delay] == ["pod-a-eph"]


# --------------------------------------------------------------------------- malformed objects
def test_malformed_claim_is_reported_by_its_problem() -> None:
    cache = cluster([node("node-a")])
    cache.volumes.problems[(vol.PERSISTENT_VOLUME_CLAIMS, "default/pvc-a")] = (
        "PersistentVolumeClaim default/pvc-a: spec.resources.requests.storage: invalid quantity 'lots'"
    )
    _, status = plugin().pre_filter(CycleState(), vb_pod("pod-a", "pvc-a"), cache)
    assert status.code == UAU and status.message.startswith(
        "PersistentVolumeClaim default/pvc-a: spec.resources"
    )


def test_malformed_volume_of_a_bound_claim_is_the_filter_reason() -> None:
    cache = cluster([node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")])
    problem = "PersistentVolume pv-a: spec.capacity.storage: invalid quantity 'x'"
    cache.volumes.problems[(vol.PERSISTENT_VOLUMES, "pv-a")] = problem
    pl, state, pod = plugin(), CycleState(), vb_pod("pod-a", "pvc-a")
    assert pl.pre_filter(state, pod, cache)[1].ok
    assert pl.filter(state, pod, cache).reasons_at(0) == ([problem], UAU)


def test_malformed_class_is_reported_instead_of_immediate_binding() -> None:
    cache = cluster([node("node-a")], [make_pvc("pvc-a", storage_class="bad")])
    cache.volumes.problems[(vol.STORAGE_CLASSES, "bad")] = (
        "StorageClass bad: volumeBindingMode: expected a string"
    )
    _, status = plugin().pre_filter(CycleState(), vb_pod("pod-a", "pvc-a"), cache)
    assert status == Status(UAU, ("StorageClass bad: volumeBindingMode: expected a string",))


# --------------------------------------------------------------------------- the binding cycle
def reserved(
    pod: Pod, cache: ClusterCache, node_name: str, client: Any = None
) -> tuple[VolumeBinding, CycleState, Pod]:
    pl, state = plugin(client), CycleState()
    assert pl.pre_filter(state, pod, cache)[1].ok
    assert pl.filter(state, pod, cache).reasons_at(cache.nodes.row_of[node_name]) == ([], Code.SUCCESS)
    assert pl.reserve(state, pod, node_name).ok
    return pl, state, with_node_name(pod, node_name)


def test_reserve_assumes_the_chosen_nodes_volume_and_unreserve_restores_it() -> None:
    cache = cluster([node("node-a"), node("node-b")], [pvc("pvc-a", "wait-sc", request="50Gi")], LOCAL_PVS)
    pl, state, assumed = reserved(vb_pod("pod-a", "pvc-a"), cache, "node-b")
    assert sorted(cache.volumes.pvs.assumed()) == ["pv-b-0"]  # the smaller fit on node-b, first in order
    chosen = cache.volumes.pvs.get("pv-b-0")
    assert chosen is not None and chosen.claim_ref is not None and chosen.claim_ref.name == "pvc-a"
    assert chosen.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert pl.pre_bind_pre_flight(state, assumed, "node-b").ok
    pl.unreserve(state, assumed, "node-b")
    assert list(cache.volumes.pvs.assumed()) == []


def test_reserve_of_a_pod_whose_claims_are_bound_leaves_pre_bind_nothing_to_do() -> None:
    cache = cluster([node("node-a")], [pvc("pvc-a", "wait-sc", bound_pv="pv-a")], [pv("pv-a", "wait-sc")])
    pl, state, assumed = reserved(vb_pod("pod-a", "pvc-a"), cache, "node-a")
    assert pl.pre_bind_pre_flight(state, assumed, "node-a") == SKIP
    assert pl.pre_bind(state, assumed, "node-a") == Status()


def test_pods_without_claims_pass_every_binding_point_without_state() -> None:
    pl, state, pod = plugin(), CycleState(), vb_pod("pod-a")
    assert pl.reserve(state, pod, "node-a").ok
    assert pl.pre_bind_pre_flight(state, pod, "node-a") == SKIP
    assert pl.pre_bind(state, pod, "node-a") == Status()
    pl.unreserve(state, pod, "node-a")


def test_pre_bind_writes_the_volume_and_waits_for_the_controller() -> None:
    cache = cluster([node("node-a")], [pvc("pvc-a", "wait-sc", request="1Gi")], [LOCAL_PVS[0]])
    api = FakeApi(cache)
    api.put_object(vol.PERSISTENT_VOLUMES, LOCAL_PVS[0])
    api.put_object(vol.PERSISTENT_VOLUME_CLAIMS, pvc("pvc-a", "wait-sc", request="1Gi"))
    pod = vb_pod("pod-a", "pvc-a")
    cache.add_pod(with_node_name(pod, "node-a"))
    pl, state, assumed = reserved(pod, cache, "node-a", client=api)
    pending = pl.pre_bind(state, assumed, "node-a")
    assert isinstance(pending, PendingPreBind)
    assert api.requests == [("PUT", "/api/v1/persistentvolumes/pv-a-0")]
    assert pending.poll(0.0) is None and pending.next_poll_at() == 1.0
    claim = dict(api.objects[(vol.PERSISTENT_VOLUME_CLAIMS, "default/pvc-a")])
    claim["spec"] = {**claim["spec"], "volumeName": "pv-a-0"}
    claim["metadata"] = {**claim["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}}
    api.update(vol.PERSISTENT_VOLUME_CLAIMS, claim)
    assert pending.poll(1.0) == Status()
    assert list(cache.volumes.pvs.assumed()) == []  # the informer delivered the written PV


def test_pre_bind_without_an_api_client_is_an_error() -> None:
    cache = cluster([node("node-a")], [pvc("pvc-a", "wait-sc", request="1Gi")], [LOCAL_PVS[0]])
    pl, state, assumed = reserved(vb_pod("pod-a", "pvc-a"), cache, "node-a")
    status = pl.pre_bind(state, assumed, "node-a")
    assert isinstance(status, Status) and status.code == Code.ERROR


def test_pre_bind_for_another_node_than_reserved_is_an_error() -> None:
    cache = cluster([node("node-a")], [pvc("pvc-a", "wait-sc", request="1Gi")], [LOCAL_PVS[0]])
    pl, state, assumed = reserved(vb_pod("pod-a", "pvc-a"), cache, "node-a")
    assert pl.pre_bind(state, assumed, "node-b") == Status(
        Code.ERROR, ('no pod volumes found for node "node-b"',)
    )


# --------------------------------------------------------------------------- events, framework
def test_registered_events_are_the_ones_the_queue_knows() -> None:
    pl = plugin()
    assert events_of_plugin(pl) == DEFAULT_PLUGIN_EVENTS[NAME]
    assert set(pl.queueing_hints()) <= set(pl.events_to_register())


def test_schedule_pod_reports_upstreams_message() -> None:
    cache = cluster(
        [node("node-a"), node("node-b"), node("node-c")], [pvc("pvc-a", "wait-sc", request="50Gi")], LOCAL_PVS
    )
    pl = plugin()
    fw = Framework("default-scheduler", pre_filter=[pl], filters=[pl])
    result = fw.schedule_pod(vb_pod("pod-a", "pvc-a"), cache)
    assert result.selected_node in {"node-a", "node-b"}
    too_big = cluster([node("node-a")], [pvc("pvc-b", "wait-sc", request="500Gi")], LOCAL_PVS)
    result = fw.schedule_pod(vb_pod("pod-b", "pvc-b"), too_big)
    assert result.message() == f"0/1 nodes are available: 1 {ERR_REASON_BIND_CONFLICT}."


def test_pre_filter_error_is_wrapped_with_the_plugin_name() -> None:
    """Upstream's RunPreFilterPlugins: ``running PreFilter plugin "VolumeBinding": <its error>``."""
    cache = cluster(
        [node("node-a")],
        [make_pvc("pvc-a", storage_class="no-mode")],
        classes=[make_storage_class("no-mode", binding_mode=None)],
    )
    pl = plugin()
    result = Framework("default-scheduler", pre_filter=[pl], filters=[pl]).schedule_pod(
        vb_pod("pod-a", "pvc-a"), cache
    )
    assert result.status == Status(
        Code.ERROR,
        ('running PreFilter plugin "VolumeBinding": VolumeBindingMode not set for StorageClass "no-mode"',),
        NAME,
    )
