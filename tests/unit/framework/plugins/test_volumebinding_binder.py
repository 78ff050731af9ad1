"""Upstream binder_test.go, ported as data: FindPodVolumes (static matching, provisioning, CSI
migration, capacity), AssumePodVolumes and RevertAssumedPodVolumes, bindAPIUpdate, checkBindings
and BindPodVolumes (with :class:`FakeApi` and a hand-driven clock).

FindPodVolumes cases run twice: through the one-node reference and through the vectorized Filter
on a cache holding the node, which must agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.framework.interface import Code, Status
from ksched.framework.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    BinderError,
    Binding,
    NodeFacts,
    PodVolumes,
    Provision,
    assume_pod_volumes,
    find_pod_volumes,
    get_pod_volume_claims,
    revert_assumed_pod_volumes,
)
from ksched.framework.plugins.volumebinding.filtering import AffinityMasks, volume_filter
from ksched.framework.plugins.volumebinding.matching import with_selected_node
from ksched.framework.plugins.volumebinding.prebind import BindingVolumes, CheckFailed, check_bindings
from ksched.model.pod import Pod, with_node_name
from tests.builders import make_node
from tests.storage_builders import make_capacity
from tests.unit.framework.plugins import volumebinding_support as s
from tests.unit.framework.plugins.volumebinding_support import (
    NODE1,
    NODE2,
    WAIT,
    WAIT_PROV,
    ZONE1,
    ZONE2,
    FakeApi,
    api_with,
    cache_with,
)

NC, BC, NES, PVNE = (
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)


def find(
    pod: Pod, cache: ClusterCache, labels: Mapping[str, str] = NODE1, csi: Any = None
) -> tuple[PodVolumes, list[str]]:
    """binder_test.go's ``findPodVolumes``: claims, the immediate-claims check, FindPodVolumes."""
    claims = get_pod_volume_claims(pod, cache.volumes)
    if claims.immediate:
        raise BinderError(ERR_UNBOUND_IMMEDIATE)
    csi_node = cache.volumes.csi_nodes.get("node1") if csi is None else csi
    return find_pod_volumes(claims, NodeFacts("node1", labels, csi_node), cache.volumes)


def vectorized_reasons(pod: Pod, cache: ClusterCache, labels: Mapping[str, str]) -> list[str]:
    """The Filter's reasons for node1 (``labels``) in a cache holding it."""
    cache.add_node(s.node_from_dict(make_node("node1", labels=labels)))
    claims = get_pod_volume_claims(pod, cache.volumes)
    fr = volume_filter(claims, cache, AffinityMasks())
    return fr.reasons_at(cache.nodes.row_of["node1"])[0]


def pairs(pv: PodVolumes) -> tuple[list[tuple[str, str]], list[tuple[str, str | None]]]:
    bindings = [(b.pvc.name, b.pv.name) for b in pv.static_bindings or ()]
    provisions = [(p.pvc.name, p.capacity.name if p.capacity else None) for p in pv.dynamic_provisions or ()]
    return bindings, provisions


def name(raw: Mapping[str, Any]) -> str:
    return raw["metadata"]["name"]


# --------------------------------------------------------------------------- FindPodVolumes
def P(
    pod_pvcs: Sequence[Mapping[str, Any]] = (),
    *,
    pvs: Sequence[Mapping[str, Any]] = (),
    cache_pvcs: Sequence[Mapping[str, Any]] | None = None,
    ephemeral: str | None = None,
    bindings: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]] = (),
    provisions: Sequence[Mapping[str, Any]] = (),
    reasons: Sequence[str] = (),
    fail: bool = False,
    needs_capacity: bool = False,
    id: str,
) -> Any:
    return pytest.param(
        dict(
            pod_pvcs=pod_pvcs,
            pvs=pvs,
            cache_pvcs=cache_pvcs,
            ephemeral=ephemeral,
            bindings=[(name(c), name(v)) for c, v in bindings],
            provisions=[name(c) for c in provisions],
            reasons=list(reasons),
            fail=fail,
            needs_capacity=needs_capacity,
        ),
        id=id,
    )


WITHOUT_PROVISIONING = [
    P(id="no-volumes"),
    P(id="no-pvcs"),
    P(cache_pvcs=[], pod_pvcs=[s.boundPVC], fail=True, id="pvc-not-found"),
    P([s.boundPVC], pvs=[s.pvBound], id="bound-pvc"),
    P([s.boundPVC], reasons=[PVNE], id="bound-pvc,pv-not-exists"),
    P([s.preboundPVC], pvs=[s.pvNode1aBound], fail=True, id="prebound-pvc"),
    P(
        [s.unboundPVC],
        pvs=[s.pvNode2, s.pvNode1a, s.pvNode1b],
        bindings=[(s.unboundPVC, s.pvNode1a)],
        id="unbound-pvc,pv-same-node",
    ),
    P([s.unboundPVC], pvs=[s.pvNode2], reasons=[BC], id="unbound-pvc,pv-different-node"),
    P(
        [s.unboundPVC, s.unboundPVC2],
        pvs=[s.pvNode1a, s.pvNode1b],
        bindings=[(s.unboundPVC, s.pvNode1a), (s.unboundPVC2, s.pvNode1b)],
        id="two-unbound-pvcs",
    ),
    P(
        [s.unboundPVC2, s.unboundPVC],
        pvs=[s.pvNode1a, s.pvNode1b],
        bindings=[(s.unboundPVC, s.pvNode1a), (s.unboundPVC2, s.pvNode1b)],
        id="two-unbound-pvcs,order-by-size",
    ),
    P(
        [s.unboundPVC, s.unboundPVC2],
        pvs=[s.pvNode1a],
        bindings=[(s.unboundPVC, s.pvNode1a)],
        reasons=[BC],
        id="two-unbound-pvcs,partial-match",
    ),
    P(
        [s.unboundPVC, s.boundPVC],
        pvs=[s.pvBound, s.pvNode1a],
        bindings=[(s.unboundPVC, s.pvNode1a)],
        id="one-bound,one-unbound",
    ),
    P(
        [s.unboundPVC, s.boundPVC],
        pvs=[s.pvBound, s.pvNode2],
        reasons=[BC],
        id="one-bound,one-unbound,no-match",
    ),
    P([s.unboundPVC, s.preboundPVC], pvs=[s.pvNode1a, s.pvNode1b], fail=True, id="one-prebound,one-unbound"),
    P([s.immediateBoundPVC], pvs=[s.pvBoundImmediate], id="immediate-bound-pvc"),
    P(
        [s.immediateBoundPVC],
        pvs=[s.pvBoundImmediateNode2],
        reasons=[NC],
        id="immediate-bound-pvc-wrong-node",
    ),
    P([s.immediateUnboundPVC], fail=True, id="immediate-unbound-pvc"),
    P(
        [s.immediateUnboundPVC, s.boundPVC],
        pvs=[s.pvBound],
        fail=True,
        id="immediate-unbound-pvc,delayed-mode-bound",
    ),
    P([s.immediateUnboundPVC, s.unboundPVC], fail=True, id="immediate-unbound-pvc,delayed-mode-unbound"),
    P(ephemeral="no-such-pvc", fail=True, id="generic-ephemeral,no-pvc"),
    P(
        ephemeral="test-volume",
        cache_pvcs=[s.correctGenericPVC],
        pvs=[s.pvBoundGeneric],
        id="generic-ephemeral,with-pvc",
    ),
    P(
        ephemeral="test-volume",
        cache_pvcs=[s.conflictingGenericPVC],
        pvs=[s.pvBoundGeneric],
        fail=True,
        id="generic-ephemeral,wrong-pvc",
    ),
]

WITH_PROVISIONING = [
    P([s.provisionedPVC], provisions=[s.provisionedPVC], needs_capacity=True, id="one-provisioned"),
    P(
        [s.unboundPVC, s.provisionedPVC],
        pvs=[s.pvNode1a],
        bindings=[(s.unboundPVC, s.pvNode1a)],
        provisions=[s.provisionedPVC],
        needs_capacity=True,
        id="two-unbound-pvcs,one-matched,one-provisioned",
    ),
    P(
        [s.boundPVC, s.provisionedPVC],
        pvs=[s.pvBound],
        provisions=[s.provisionedPVC],
        needs_capacity=True,
        id="one-bound,one-provisioned",
    ),
    P(
        [s.boundPVC, s.selectedNodePVC],
        pvs=[s.pvBound],
        provisions=[s.selectedNodePVC],
        needs_capacity=True,
        id="one-binding,one-selected-node",
    ),
    P([s.immediateUnboundPVC], fail=True, id="immediate-unbound-pvc"),
    P(
        [s.immediateBoundPVC, s.provisionedPVC],
        pvs=[s.pvBoundImmediate],
        provisions=[s.provisionedPVC],
        needs_capacity=True,
        id="one-immediate-bound,one-provisioned",
    ),
    P([s.noProvisionerPVC], reasons=[BC], id="invalid-provisioner"),
    P([s.topoMismatchPVC], reasons=[BC], id="volume-topology-unsatisfied"),
]

DRIVERS = [
    pytest.param(None, id="no CSIDriver"),
    pytest.param(True, id="CSIDriver with capacity tracking"),
    pytest.param(False, id="CSIDriver without capacity tracking"),
]


def _run_find(case: dict[str, Any], opt_in: bool | None) -> None:
    cache_pvcs = case["cache_pvcs"] if case["cache_pvcs"] is not None else case["pod_pvcs"]
    drivers = [s.capacity_driver(opt_in)] if opt_in is not None else []
    cache = cache_with(pvs=case["pvs"], pvcs=cache_pvcs, csi_drivers=drivers)
    ephemeral = [case["ephemeral"]] if case["ephemeral"] else []
    pod = s.upstream_pod(case["pod_pvcs"], ephemeral=ephemeral)
    reasons, provisions = list(case["reasons"]), list(case["provisions"])
    if case["needs_capacity"] and opt_in:  # without CSIStorageCapacity objects, provisioning is blocked
        reasons.append(NES)
        provisions = []
    if case["fail"]:
        with pytest.raises(BinderError):
            find(pod, cache)
        return
    pod_volumes, got = find(pod, cache)
    assert got == reasons
    assert pairs(pod_volumes) == (case["bindings"], [(p, None) for p in provisions])
    assert vectorized_reasons(pod, cache, NODE1) == reasons


@pytest.mark.parametrize("opt_in", DRIVERS)
@pytest.mark.parametrize("case", WITHOUT_PROVISIONING)
def test_find_pod_volumes_without_provisioning(case: dict[str, Any], opt_in: bool | None) -> None:
    _run_find(case, opt_in)


@pytest.mark.parametrize("opt_in", DRIVERS)
@pytest.mark.parametrize("case", WITH_PROVISIONING)
def test_find_pod_volumes_with_provisioning(case: dict[str, Any], opt_in: bool | None) -> None:
    _run_find(case, opt_in)


@pytest.mark.parametrize(
    ("node_labels", "csi_node", "reasons"),
    [
        pytest.param(ZONE1, "kubernetes.io/gce-pd", [], id="pvc-bound"),
        pytest.param(ZONE1, "", [], id="pvc-bound,csinode-not-migrated"),
        pytest.param(ZONE1, None, [], id="pvc-bound,missing-csinode"),
        pytest.param(ZONE2, "kubernetes.io/gce-pd", [NC], id="pvc-bound,node-different-zone"),
    ],
)
def test_find_pod_volumes_with_csi_migration(
    node_labels: Mapping[str, str], csi_node: str | None, reasons: list[str]
) -> None:
    csi_nodes = [s.make_csi_node("node1", migrated=csi_node)] if csi_node is not None else []
    cache = cache_with(pvs=[s.migrationPVBound], pvcs=[s.boundMigrationPVC], csi_nodes=csi_nodes)
    pod = s.upstream_pod([s.boundMigrationPVC])
    _, got = find(pod, cache, node_labels)
    assert got == reasons
    assert vectorized_reasons(pod, cache, node_labels) == reasons


# --------------------------------------------------------------------------- AssumePodVolumes
def binding(pvc_raw: Mapping[str, Any], pv_raw: Mapping[str, Any]) -> Binding:
    return Binding(s.pvc(pvc_raw), s.pv(pv_raw))


def assert_assumed(cache: ClusterCache, bindings: list[Binding], provisions: list[Provision]) -> None:
    """binder_test.go's ``validateAssume``: PVs pre-bound to their claims, claims with node1."""
    for b in bindings:
        cached = cache.volumes.pvs.get(b.pv.name)
        assert cached is not None and cached.claim_ref is not None
        assert (cached.claim_ref.namespace, cached.claim_ref.name) == (b.pvc.namespace, b.pvc.name)
    for p in provisions:
        cached_pvc = cache.volumes.pvcs.get(p.pvc.key)
        assert cached_pvc is not None and cached_pvc.selected_node == "node1"


def assert_restored(cache: ClusterCache) -> None:
    """``validateCacheRestored``: nothing assumed any more."""
    assert list(cache.volumes.pvs.assumed()) == []
    assert list(cache.volumes.pvcs.assumed()) == []


@pytest.mark.parametrize(
    ("pod_pvcs", "pvs", "bindings", "provisions", "fail", "all_bound", "expected"),
    [
        pytest.param([s.boundPVC], [s.pvBound], [], [], False, True, None, id="all-bound"),
        pytest.param(
            [s.unboundPVC],
            [s.pvNode1a],
            [(s.unboundPVC, s.pvNode1a)],
            [],
            False,
            False,
            [(s.unboundPVC, s.pvNode1aBound)],
            id="one-binding",
        ),
        pytest.param(
            [s.unboundPVC, s.unboundPVC2],
            [s.pvNode1a, s.pvNode1b],
            [(s.unboundPVC, s.pvNode1a), (s.unboundPVC2, s.pvNode1b)],
            [],
            False,
            False,
            [(s.unboundPVC, s.pvNode1aBound), (s.unboundPVC2, s.pvNode1bBound)],
            id="two-bindings",
        ),
        pytest.param(
            [s.unboundPVC],
            [s.pvNode1aBound],
            [(s.unboundPVC, s.pvNode1aBound)],
            [],
            False,
            False,
            [(s.unboundPVC, s.pvNode1aBound)],
            id="pv-already-bound",
        ),
        pytest.param(
            [s.unboundPVC],
            [s.pvNode1a],
            [(s.unboundPVC, s.pvNode1a), (s.unboundPVC2, s.pvNode1b)],
            [],
            True,
            False,
            None,
            id="tmpupdate-failed",
        ),
        pytest.param(
            [s.unboundPVC, s.provisionedPVC],
            [s.pvNode1a],
            [(s.unboundPVC, s.pvNode1a)],
            [s.provisionedPVC],
            False,
            False,
            [(s.unboundPVC, s.pvNode1aBound)],
            id="one-binding, one-pvc-provisioned",
        ),
        pytest.param(
            [s.unboundPVC, s.provisionedPVCHigherVersion],
            [s.pvNode1a],
            [(s.unboundPVC, s.pvNode1a)],
            [s.provisionedPVC2],
            True,
            False,
            None,
            id="one-binding, one-provision-tmpupdate-failed",
        ),
    ],
)
def test_assume_pod_volumes(
    pod_pvcs: list[Any],
    pvs: list[Any],
    bindings: list[Any],
    provisions: list[Any],
    fail: bool,
    all_bound: bool,
    expected: Any,
) -> None:
    cache = cache_with(pvs=pvs, pvcs=pod_pvcs)
    pod = s.upstream_pod(pod_pvcs)
    pod_volumes = PodVolumes([binding(c, v) for c, v in bindings], [Provision(s.pvc(p)) for p in provisions])
    if fail:
        with pytest.raises(BinderError):
            assume_pod_volumes(pod, "node1", pod_volumes, cache.volumes)
        assert_restored(cache)
        return
    assert assume_pod_volumes(pod, "node1", pod_volumes, cache.volumes) is all_bound
    if all_bound:
        return
    assert [(b.pvc.name, b.pv.name) for b in pod_volumes.static_bindings or ()] == [
        (name(c), name(v)) for c, v in expected
    ]
    for b, (_, want) in zip(pod_volumes.static_bindings or (), expected, strict=True):
        assert b.pv.claim_ref == s.pv(want).claim_ref
        assert b.pv.annotations == s.pv(want).annotations
    assert_assumed(cache, pod_volumes.static_bindings or [], pod_volumes.dynamic_provisions or [])


def test_revert_assumed_pod_volumes() -> None:
    cache = cache_with(pvs=[s.pvNode1a], pvcs=[s.unboundPVC, s.provisionedPVC])
    pod = s.upstream_pod([s.unboundPVC, s.provisionedPVC])
    pod_volumes = PodVolumes([binding(s.unboundPVC, s.pvNode1a)], [Provision(s.pvc(s.provisionedPVC))])
    assert assume_pod_volumes(pod, "node1", pod_volumes, cache.volumes) is False
    assert_assumed(cache, pod_volumes.static_bindings or [], pod_volumes.dynamic_provisions or [])
    revert_assumed_pod_volumes(pod_volumes, cache.volumes)
    assert_restored(cache)
    assert cache.volumes.pvcs.get("testns/provisioned-pvc").selected_node is None  # type: ignore[union-attr]


def test_find_then_assume_keeps_choosing_the_assumed_volume() -> None:
    """TestFindAssumeVolumes: once assumed, the PV pre-bound to the claim is found every time."""
    cache = cache_with(pvs=[s.pvNode2, s.pvNode1a, s.pvNode1c], pvcs=[s.unboundPVC])
    pod = s.upstream_pod([s.unboundPVC])
    pod_volumes, reasons = find(pod, cache)
    assert reasons == []
    assert assume_pod_volumes(pod, "node1", pod_volumes, cache.volumes) is False
    chosen = pairs(pod_volumes)
    for _ in range(5):
        again, reasons = find(pod, cache)
        assert reasons == [] and pairs(again) == chosen


# --------------------------------------------------------------------------- bindAPIUpdate
def run_writes(bv: BindingVolumes, now: float = 0.0) -> Status | None:
    """Poll until the writes are done (a FakeApi that does not hold answers at once)."""
    return bv.poll(now)


@pytest.mark.parametrize(
    (
        "bindings",
        "cached_pvs",
        "api_pvs",
        "provisioned",
        "cached_pvcs",
        "api_pvcs",
        "fail",
        "want_pvs",
        "want_api_pvs",
        "want_pvcs",
        "want_api_pvcs",
    ),
    [
        pytest.param(None, [], None, None, [], None, True, [], None, [], None, id="nothing-to-bind-nil"),
        pytest.param(
            None, [], None, [], [], None, True, [], None, [], None, id="nothing-to-bind-bindings-nil"
        ),
        pytest.param(
            [], [], None, None, [], None, True, [], None, [], None, id="nothing-to-bind-provisionings-nil"
        ),
        pytest.param([], [], None, [], [], None, False, [], None, [], None, id="nothing-to-bind-empty"),
        pytest.param(
            [(s.unboundPVC, s.pvNode1aBound)],
            [s.pvNode1a],
            None,
            [],
            [],
            None,
            False,
            [s.pvNode1aBound],
            None,
            [],
            None,
            id="one-binding",
        ),
        pytest.param(
            [(s.unboundPVC, s.pvNode1aBound), (s.unboundPVC2, s.pvNode1bBound)],
            [s.pvNode1a, s.pvNode1b],
            None,
            [],
            [],
            None,
            False,
            [s.pvNode1aBound, s.pvNode1bBound],
            None,
            [],
            None,
            id="two-bindings",
        ),
        pytest.param(
            [(s.unboundPVC, s.pvNode1aBound)],
            [s.pvNode1aBound],
            None,
            [],
            [],
            None,
            False,
            [s.pvNode1aBound],
            None,
            [],
            None,
            id="api-already-updated",
        ),
        pytest.param(
            [(s.unboundPVC, s.pvNode1aBound), (s.unboundPVC2, s.pvNode1bBound)],
            [s.pvNode1a, s.pvNode1b],
            [s.pvNode1a, s.pvNode1bBoundHigherVersion],
            [],
            [],
            None,
            True,
            [s.pvNode1aBound, s.pvNode1b],
            [s.pvNode1aBound, s.pvNode1bBoundHigherVersion],
            [],
            None,
            id="api-update-failed",
        ),
        pytest.param(
            [],
            [],
            None,
            [s.provisionedPVC],
            [s.provisionedPVC],
            None,
            False,
            [],
            None,
            ["provision:provisioned-pvc"],
            None,
            id="one-provisioned-pvc",
        ),
        pytest.param(
            [],
            [],
            None,
            [s.provisionedPVC, s.provisionedPVC2],
            [s.provisionedPVC, s.provisionedPVC2],
            [s.provisionedPVC, s.provisionedPVCHigherVersion],
            True,
            [],
            None,
            ["provision:provisioned-pvc", s.provisionedPVC2],
            ["provision:provisioned-pvc", s.provisionedPVCHigherVersion],
            id="provision-api-update-failed",
        ),
        pytest.param(
            [(s.unboundPVC, s.pvNode1aBound)],
            [s.pvNode1a],
            None,
            [s.provisionedPVC, s.provisionedPVC2],
            [s.provisionedPVC, s.provisionedPVC2],
            [s.provisionedPVC, s.provisionedPVCHigherVersion],
            True,
            [s.pvNode1aBound],
            None,
            ["provision:provisioned-pvc", s.provisionedPVC2],
            ["provision:provisioned-pvc", s.provisionedPVCHigherVersion],
            id="binding-succeed, provision-api-update-failed",
        ),
    ],
)
def test_bind_api_update(
    bindings: Any,
    cached_pvs: Any,
    api_pvs: Any,
    provisioned: Any,
    cached_pvcs: Any,
    api_pvcs: Any,
    fail: bool,
    want_pvs: Any,
    want_api_pvs: Any,
    want_pvcs: Any,
    want_api_pvcs: Any,
) -> None:
    cache = cache_with(nodes=[s.node1_raw(**NODE1)], pvs=cached_pvs, pvcs=cached_pvcs)
    api = api_with(
        cache,
        api_pvs if api_pvs is not None else cached_pvs,
        api_pvcs if api_pvcs is not None else cached_pvcs,
        deliver=False,
    )
    pod = s.upstream_pod()
    bs = None if bindings is None else [binding(c, v) for c, v in bindings]
    ps = (
        None
        if provisioned is None
        else [Provision(with_selected_node(s.pvc(p), "node1")) for p in provisioned]
    )
    for b in bs or ():  # the test's assumeVolumes
        cache.volumes.assume_pv(b.pv)
    for p in ps or ():
        cache.volumes.assume_pvc(p.pvc)
    bv = BindingVolumes(client=api, cluster=cache, pod=pod, pod_volumes=PodVolumes(bs, ps), bind_timeout_s=10)
    status = run_writes(bv)
    if fail:
        assert status is not None and status.code == Code.ERROR
    else:
        assert status is None  # the writes went out; the wait for the PV controller begins
    for want in want_pvs:  # validateBind: the cache, resourceVersion aside
        got = cache.volumes.pvs.get(name(want))
        assert got is not None and got.claim_ref == s.pv(want).claim_ref
    for want in want_api_pvs if want_api_pvs is not None else want_pvs:
        stored = api.objects[(vol.PERSISTENT_VOLUMES, name(want))]
        assert stored["spec"].get("claimRef", {}).get("name") == (want["spec"].get("claimRef") or {}).get(
            "name"
        )
    for want in want_pvcs:  # validateProvision
        if isinstance(want, str):
            cached = cache.volumes.pvcs.get(f"testns/{want.split(':')[1]}")
            assert cached is not None and cached.selected_node == "node1"
        else:
            cached = cache.volumes.pvcs.get(f"testns/{name(want)}")
            assert cached is not None and cached.selected_node is None
    for want in want_api_pvcs if want_api_pvcs is not None else want_pvcs:
        key = f"testns/{want.split(':')[1]}" if isinstance(want, str) else f"testns/{name(want)}"
        stored = api.objects[(vol.PERSISTENT_VOLUME_CLAIMS, key)]
        selected = (stored["metadata"].get("annotations") or {}).get("volume.kubernetes.io/selected-node")
        assert selected == ("node1" if isinstance(want, str) else None)


# --------------------------------------------------------------------------- checkBindings
def provision_ann(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``addProvisionAnn``: the raw claim with node1 selected."""
    return dict(with_selected_node(s.pvc(raw), "node1").raw)


def empty_annotations(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``pvcSetEmptyAnnotations``."""
    out = s.bump(raw, int(raw["metadata"]["resourceVersion"]))
    out["metadata"]["annotations"] = {}
    return out


def selected(raw: Mapping[str, Any], node: str) -> dict[str, Any]:
    """``pvcSetSelectedNode``."""
    return dict(with_selected_node(s.pvc(raw), node).raw)


def without_claim_uid(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``pvRemoveClaimUID``."""
    out = s.bump(raw, int(raw["metadata"]["resourceVersion"]))
    out["spec"]["claimRef"].pop("uid", None)
    return out


def binding_env(
    *,
    nodes: Sequence[Mapping[str, Any]],
    init_pvs: Sequence[Mapping[str, Any]],
    init_pvcs: Sequence[Mapping[str, Any]],
    bindings: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    provisioned: Sequence[Mapping[str, Any]],
    csi_nodes: Sequence[Mapping[str, Any]] = (),
) -> tuple[ClusterCache, FakeApi, Pod, list[Binding], list[Provision]]:
    """binder_test.go's setup for checkBindings / BindPodVolumes: the pod assumed on node1, the
    objects in cache and API, the bindings and provisionings assumed."""
    cache = cache_with(nodes=nodes, pvs=init_pvs, pvcs=init_pvcs, csi_nodes=csi_nodes)
    api = api_with(cache, init_pvs, init_pvcs)
    pod = with_node_name(s.upstream_pod(), "node1")
    cache.assume(pod, "node1") if "node1" in cache.nodes.row_of else cache.add_pod(pod)
    bs = [binding(c, v) for c, v in bindings]
    ps = [Provision(s.pvc(p)) for p in provisioned]
    for b in bs:
        cache.volumes.assume_pv(b.pv)
    for p in ps:
        cache.volumes.assume_pvc(p.pvc)
    return cache, api, pod, bs, ps


N1 = [s.node1_raw(**NODE1)]

CHECK_BINDINGS = [
    pytest.param(dict(bindings=None, provisioned=None), True, False, id="nothing-to-bind-nil"),
    pytest.param(dict(bindings=None, provisioned=[]), True, False, id="nothing-to-bind-bindings-nil"),
    pytest.param(dict(bindings=[], provisioned=None), True, False, id="nothing-to-bind-provisionings-nil"),
    pytest.param(dict(bindings=[], provisioned=[]), False, True, id="nothing-to-bind"),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            init_pvs=[s.pvNode1aBound],
            init_pvcs=[s.boundPVCNode1a],
        ),
        False,
        True,
        id="binding-bound",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            init_pvs=[s.pvNode1aBound],
            init_pvcs=[s.preboundPVCNode1a],
        ),
        False,
        False,
        id="binding-prebound",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)], init_pvs=[s.pvNode1aBound], init_pvcs=[s.unboundPVC]
        ),
        False,
        False,
        id="binding-unbound",
    ),
    pytest.param(
        dict(bindings=[(s.unboundPVC, s.pvNode1aBound)], init_pvs=[s.pvNode1aBound]),
        True,
        False,
        id="binding-pvc-not-exists",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            init_pvs=[s.pvNode1aBound],
            init_pvcs=[s.boundPVCNode1a],
            delete_pvs=True,
        ),
        True,
        False,
        id="binding-pv-not-exists",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            init_pvs=[s.pvNode1a],
            init_pvcs=[s.boundPVCNode1a],
            api_pvs=[s.pvNode1a],
            api_pvcs=[s.boundPVCNode1a],
        ),
        True,
        False,
        id="binding-claimref-nil",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            init_pvs=[s.pvNode1aBound],
            init_pvcs=[s.boundPVCNode1a],
            api_pvs=[without_claim_uid(s.pvNode1aBound)],
            api_pvcs=[s.boundPVCNode1a],
        ),
        True,
        False,
        id="binding-claimref-uid-empty",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound), (s.unboundPVC2, s.pvNode1bBound)],
            init_pvs=[s.pvNode1aBound, s.pvNode1bBound],
            init_pvcs=[s.boundPVCNode1a, s.unboundPVC2],
        ),
        False,
        False,
        id="binding-one-bound,one-unbound",
    ),
    pytest.param(
        dict(
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvs=[s.pvBound],
            init_pvcs=[s.provisionedPVCBound],
            api_pvcs=[provision_ann(s.provisionedPVCBound)],
        ),
        False,
        True,
        id="provisioning-pvc-bound",
    ),
    pytest.param(
        dict(provisioned=[provision_ann(s.provisionedPVC)], init_pvcs=[provision_ann(s.provisionedPVC)]),
        False,
        False,
        id="provisioning-pvc-unbound",
    ),
    pytest.param(
        dict(provisioned=[provision_ann(s.provisionedPVC)], init_pvcs=[s.provisionedPVC], delete_pvcs=True),
        True,
        False,
        id="provisioning-pvc-not-exists",
    ),
    pytest.param(
        dict(
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvcs=[s.provisionedPVC],
            api_pvcs=[s.provisionedPVC],
        ),
        True,
        False,
        id="provisioning-pvc-annotations-nil",
    ),
    pytest.param(
        dict(
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvcs=[s.provisionedPVC],
            api_pvcs=[empty_annotations(s.provisionedPVC)],
        ),
        True,
        False,
        id="provisioning-pvc-selected-node-dropped",
    ),
    pytest.param(
        dict(
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvcs=[s.provisionedPVC],
            api_pvcs=[selected(s.provisionedPVC, "wrong-node")],
        ),
        True,
        False,
        id="provisioning-pvc-selected-node-wrong-node",
    ),
    pytest.param(
        dict(
            bindings=[(s.unboundPVC, s.pvNode1aBound)],
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvs=[s.pvNode1aBound],
            init_pvcs=[s.boundPVCNode1a, provision_ann(s.provisionedPVC)],
        ),
        False,
        False,
        id="binding-bound-provisioning-unbound",
    ),
    pytest.param(
        dict(
            provisioned=[provision_ann(s.provisionedPVC)],
            init_pvs=[s.pvNode1a],
            init_pvcs=[s.provisionedPVC],
            api_pvcs=[provision_ann(s.provisionedPVCBound)],
            delete_pvs=True,
        ),
        False,
        False,
        id="tolerate-provisioning-pvc-bound-pv-not-found",
    ),
]


def _check(case: dict[str, Any], nodes: Sequence[Mapping[str, Any]] = N1, csi: Sequence[Any] = ()) -> Any:
    bindings, provisioned = case.get("bindings", []), case.get("provisioned", [])
    init_pvs, init_pvcs = case.get("init_pvs", []), case.get("init_pvcs", [])
    cache, api, pod, bs, ps = binding_env(
        nodes=nodes,
        init_pvs=init_pvs,
        init_pvcs=init_pvcs,
        bindings=bindings or [],
        provisioned=provisioned or [],
        csi_nodes=csi,
    )
    if case.get("delete_pvs"):
        for raw in init_pvs:
            api.delete(vol.PERSISTENT_VOLUMES, name(raw))
    else:
        for raw in case.get("api_pvs", []):
            api.update(vol.PERSISTENT_VOLUMES, raw)
    if case.get("delete_pvcs"):
        for raw in init_pvcs:
            api.delete(vol.PERSISTENT_VOLUME_CLAIMS, f"testns/{name(raw)}")
    else:
        for raw in case.get("api_pvcs", []):
            api.update(vol.PERSISTENT_VOLUME_CLAIMS, raw)
    return check_bindings(pod, None if bindings is None else bs, None if provisioned is None else ps, cache)


@pytest.mark.parametrize(("case", "fail", "bound"), CHECK_BINDINGS)
def test_check_bindings(case: dict[str, Any], fail: bool, bound: bool) -> None:
    if fail:
        with pytest.raises(CheckFailed):
            _check(case)
    else:
        assert _check(case) is bound


@pytest.mark.parametrize(
    ("case", "node", "csi", "fail", "bound"),
    [
        pytest.param(
            dict(
                provisioned=[provision_ann(s.provMigrationPVCBound)],
                init_pvs=[s.migrationPVBound],
                init_pvcs=[s.provMigrationPVCBound],
                api_pvcs=[provision_ann(s.provMigrationPVCBound)],
            ),
            ZONE1,
            "kubernetes.io/gce-pd",
            False,
            True,
            id="provisioning-pvc-bound",
        ),
        pytest.param(
            dict(
                bindings=[(s.unboundPVC, s.migrationPVBoundToUnbound)],
                init_pvs=[s.migrationPVBoundToUnbound],
                init_pvcs=[s.unboundPVC],
            ),
            ZONE1,
            "kubernetes.io/gce-pd",
            False,
            False,
            id="binding-node-pv-same-zone",
        ),
        pytest.param(
            dict(
                bindings=[(s.unboundPVC, s.migrationPVBoundToUnbound)],
                init_pvs=[s.migrationPVBoundToUnbound],
                init_pvcs=[s.unboundPVC],
            ),
            ZONE1,
            None,
            False,
            False,
            id="binding-without-csinode",
        ),
        pytest.param(
            dict(
                bindings=[(s.unboundPVC, s.migrationPVBoundToUnbound)],
                init_pvs=[s.migrationPVBoundToUnbound],
                init_pvcs=[s.unboundPVC],
            ),
            ZONE1,
            "",
            False,
            False,
            id="binding-non-migrated-plugin",
        ),
        pytest.param(
            dict(
                bindings=[(s.unboundPVC, s.migrationPVBoundToUnbound)],
                init_pvs=[s.migrationPVBoundToUnbound],
                init_pvcs=[s.unboundPVC],
            ),
            ZONE2,
            "kubernetes.io/gce-pd",
            True,
            False,
            id="binding-node-pv-in-different-zones",
        ),
        pytest.param(
            dict(
                bindings=[(s.unboundPVC, s.nonmigrationPVBoundToUnbound)],
                init_pvs=[s.nonmigrationPVBoundToUnbound],
                init_pvcs=[s.unboundPVC],
            ),
            ZONE2,
            "kubernetes.io/gce-pd",
            False,
            False,
            id="binding-node-pv-different-zones-migration-off",
        ),
    ],
)
def test_check_bindings_with_csi_migration(
    case: dict[str, Any], node: Mapping[str, str], csi: str | None, fail: bool, bound: bool
) -> None:
    csi_nodes = [s.make_csi_node("node1", migrated=csi)] if csi is not None else []
    nodes = [s.node1_raw(**node)]
    if fail:
        with pytest.raises(CheckFailed):
            _check(case, nodes, csi_nodes)
    else:
        assert _check(case, nodes, csi_nodes) is bound


# --------------------------------------------------------------------------- BindPodVolumes
def _bind_pvc_to(api: FakeApi, cache: ClusterCache, pvc_raw: Mapping[str, Any], pv_name: str) -> None:
    """The PV controller: the claim (the API's current copy) bound to ``pv_name``."""
    key = (vol.PERSISTENT_VOLUME_CLAIMS, f"testns/{name(pvc_raw)}")
    current = s.bump(api.objects[key], int(api.objects[key]["metadata"]["resourceVersion"]))
    current["spec"]["volumeName"] = pv_name
    current["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    api.update(vol.PERSISTENT_VOLUME_CLAIMS, current)


def _static_bound(api: FakeApi, cache: ClusterCache, pod: Pod) -> None:
    _bind_pvc_to(api, cache, s.unboundPVC, "pv-node1a")


def _dynamic_bound(api: FakeApi, cache: ClusterCache, pod: Pod) -> None:
    key = (vol.PERSISTENT_VOLUME_CLAIMS, "testns/provisioned-pvc")
    claim = api.objects[key]
    dynamic = s.upstream_pv("dynamic-pv", "node1", "1G", "1", claim, WAIT)
    api.put_object(vol.PERSISTENT_VOLUMES, dynamic)
    cache.volumes.upsert(vol.PERSISTENT_VOLUMES, s.pv(dynamic))
    _bind_pvc_to(api, cache, s.provisionedPVC, "dynamic-pv")


def _pod_deleted(api: FakeApi, cache: ClusterCache, pod: Pod) -> None:
    cache.remove_pod(pod.uid)


def _pvc_deleted(api: FakeApi, cache: ClusterCache, pod: Pod) -> None:
    api.delete(vol.PERSISTENT_VOLUME_CLAIMS, "testns/unbound-pvc")


def _bound_elsewhere(api: FakeApi, cache: ClusterCache, pod: Pod) -> None:
    _bind_pvc_to(api, cache, s.selectedNodePVC, "pv-node2")


@pytest.mark.parametrize(
    (
        "nodes",
        "init_pvs",
        "init_pvcs",
        "binding_",
        "provision",
        "api_pv",
        "api_pvc",
        "later",
        "fail",
        "message",
    ),
    [
        pytest.param(
            [],
            [],
            [],
            None,
            None,
            None,
            None,
            None,
            True,
            'failed to get node "node1"',
            id="nothing-to-bind-nil",
        ),
        pytest.param(N1, [], [], None, None, None, None, None, False, "", id="nothing-to-bind-empty"),
        pytest.param(
            N1,
            [s.pvNode1aBound],
            [s.boundPVCNode1a],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            None,
            False,
            "",
            id="already-bound",
        ),
        pytest.param(
            N1,
            [s.pvNode1a],
            [s.unboundPVC],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            _static_bound,
            False,
            "",
            id="binding-static-pv-succeeds-after-time",
        ),
        pytest.param(
            N1,
            [],
            [s.provisionedPVC],
            None,
            selected(s.provisionedPVC, "node1"),
            None,
            None,
            _dynamic_bound,
            False,
            "",
            id="binding-dynamic-pv-succeeds-after-time",
        ),
        pytest.param(
            N1,
            [s.pvNode1a],
            [s.unboundPVC],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            s.pvNode1aBound,
            s.boundPVCNode1a,
            None,
            True,
            "Operation cannot be fulfilled",
            id="bound-by-pv-controller-before-bind",
        ),
        pytest.param(
            N1,
            [s.pvNode1a],
            [s.unboundPVC],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            _pod_deleted,
            True,
            'binding volumes: pod does not exist any more: pod "test-pod" not found',
            id="pod-deleted-after-time",
        ),
        pytest.param(
            N1,
            [s.pvNode1a],
            [s.unboundPVC],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            None,
            True,
            "binding volumes: context deadline exceeded",
            id="binding-times-out",
        ),
        pytest.param(
            N1,
            [s.pvNode1b],
            [s.unboundPVC2],
            (s.unboundPVC2, s.pvNode1bBound),
            None,
            None,
            None,
            None,
            True,
            "binding volumes: context deadline exceeded",
            id="binding-fails",
        ),
        pytest.param(
            N1,
            [s.pvNode1a],
            [s.unboundPVC],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            _pvc_deleted,
            True,
            'binding volumes: failed to check binding: could not find v1.PersistentVolumeClaim "testns/unbound-pvc"',  # noqa: E501
            id="check-fails",
        ),
        pytest.param(
            [s.node1_raw()],
            [s.pvNode1aBound],
            [s.boundPVCNode1a],
            (s.unboundPVC, s.pvNode1aBound),
            None,
            None,
            None,
            None,
            True,
            'binding volumes: pv "pv-node1a" node affinity doesn\'t match node "node1": no matching NodeSelectorTerms',  # noqa: E501
            id="node-affinity-fails",
        ),
        pytest.param(
            [*N1, make_node("node2", labels=NODE2)],
            [s.pvNode1a, s.pvNode2],
            [s.selectedNodePVC],
            None,
            s.selectedNodePVC,
            None,
            None,
            _bound_elsewhere,
            True,
            'binding volumes: pv "pv-node2" node affinity doesn\'t match node "node1"',
            id="node-affinity-fails-dynamic-provisioning",
        ),
    ],
)
def test_bind_pod_volumes(
    nodes: Any,
    init_pvs: Any,
    init_pvcs: Any,
    binding_: Any,
    provision: Any,
    api_pv: Any,
    api_pvc: Any,
    later: Any,
    fail: bool,
    message: str,
) -> None:
    """TestBindPodVolumes with a 10 s bind timeout and the "delay function" at 5 s, on a clock the
    test moves: polled every second as upstream polls."""
    cache, api, pod, bs, ps = binding_env(
        nodes=nodes,
        init_pvs=init_pvs,
        init_pvcs=init_pvcs,
        bindings=[binding_] if binding_ else [],
        provisioned=[provision] if provision else [],
    )
    if api_pv is not None:
        api.update(vol.PERSISTENT_VOLUMES, api_pv)
    if api_pvc is not None:
        api.update(vol.PERSISTENT_VOLUME_CLAIMS, api_pvc)
    bv = BindingVolumes(client=api, cluster=cache, pod=pod, pod_volumes=PodVolumes(bs, ps), bind_timeout_s=10)
    now, status = 0.0, bv.poll(0.0)
    while status is None:
        now = bv.next_poll_at()
        assert now < 11, "the pending PreBind must end by its deadline"
        if later is not None and now >= 5:
            later(api, cache, pod)
            later = None
        status = bv.poll(now)
    if fail:
        assert status.code == Code.ERROR and message in status.message
    else:
        assert status.ok, status.message


def test_binding_is_checked_first_a_second_after_the_writes_answered() -> None:
    cache, api, pod, bs, _ = binding_env(
        nodes=N1,
        init_pvs=[s.pvNode1a],
        init_pvcs=[s.unboundPVC],
        bindings=[(s.unboundPVC, s.pvNode1aBound)],
        provisioned=[],
    )
    api.hold = True
    bv = BindingVolumes(client=api, cluster=cache, pod=pod, pod_volumes=PodVolumes(bs, []), bind_timeout_s=10)
    woken: list[int] = []
    bv.set_waker(lambda: woken.append(1))
    assert bv.poll(0.0) is None and bv.next_poll_at() == float("inf")  # waiting for the answer
    api.answer()
    assert woken == [1]
    assert bv.poll(2.0) is None and bv.next_poll_at() == 3.0
    _bind_pvc_to(api, cache, s.unboundPVC, "pv-node1a")
    assert bv.poll(2.5) is None  # not due yet
    assert bv.poll(3.0) == Status()


def test_a_zero_bind_timeout_fails_once_the_writes_answered() -> None:
    """bindTimeoutSeconds 0: the writes are made, then the poll's deadline has passed before its
    first tick (upstream's PollUntilContextTimeout without an immediate check), even though the
    volumes are already bound."""
    cache, api, pod, bs, _ = binding_env(
        nodes=N1,
        init_pvs=[s.pvNode1a],
        init_pvcs=[s.unboundPVC],
        bindings=[(s.unboundPVC, s.pvNode1aBound)],
        provisioned=[],
    )
    bv = BindingVolumes(client=api, cluster=cache, pod=pod, pod_volumes=PodVolumes(bs, []), bind_timeout_s=0)
    _bind_pvc_to(api, cache, s.unboundPVC, "pv-node1a")
    status = bv.poll(0.0)
    assert api.requests == [("PUT", "/api/v1/persistentvolumes/pv-node1a")] and status is not None
    assert status.code == Code.ERROR and status.message == "binding volumes: context deadline exceeded"


# --------------------------------------------------------------------------- capacity
NODE1_CAP = dict(node_labels=NODE1, capacity="1Gi")
NET = dict(everywhere=True, capacity="1Gi")


@pytest.mark.parametrize(
    ("capacities", "expected", "reasons"),
    [
        pytest.param([NET], "net", [], id="network-attached"),
        pytest.param([NODE1_CAP], "net", [], id="local-storage"),
        pytest.param([NET, dict(node_labels=NODE2, capacity="1Gi"), NODE1_CAP], "net", [], id="multiple"),
        pytest.param([], None, [NES], id="no-storage"),
        pytest.param([dict(node_labels=NODE2, capacity="1Gi")], None, [NES], id="wrong-node"),
        pytest.param(
            [dict(node_labels=NODE1, capacity="1Gi", cls=WAIT)], None, [NES], id="wrong-storage-class"
        ),
        pytest.param([dict(node_labels=NODE1, capacity="1Mi")], None, [NES], id="insufficient-storage"),
        pytest.param(
            [dict(node_labels=NODE1, capacity="1Gi", maximum_volume_size="1Mi")],
            None,
            [NES],
            id="insufficient-volume-size",
        ),
        pytest.param([dict(node_labels=NODE1, capacity="0Mi")], None, [NES], id="zero-storage"),
        pytest.param(
            [dict(node_labels=NODE1, maximum_volume_size="0Mi")], None, [NES], id="zero-volume-size"
        ),
        pytest.param([dict(node_labels=NODE1)], None, [NES], id="nil-storage"),
    ],
)
@pytest.mark.parametrize(
    "opt_in",
    [
        pytest.param(True, id="CSIDriver.StorageCapacity=true"),
        pytest.param(False, id="CSIDriver.StorageCapacity=false"),
    ],
)
def test_capacity(
    capacities: list[dict[str, Any]], expected: str | None, reasons: list[str], opt_in: bool
) -> None:
    """TestCapacity. Upstream's capacity objects all share one name, so the store keeps the last."""
    caps = [make_capacity("net", c.pop("cls", WAIT_PROV), **c) for c in (dict(c) for c in capacities)]
    cache = cache_with(pvcs=[s.provisionedPVC], csi_drivers=[s.capacity_driver(opt_in)], capacities=caps)
    pod = s.upstream_pod([s.provisionedPVC])
    pod_volumes, got = find(pod, cache)
    if not opt_in:
        assert got == [] and pairs(pod_volumes) == ([], [("provisioned-pvc", None)])
        return
    assert got == reasons
    assert vectorized_reasons(pod, cache, NODE1) == reasons
    if not reasons:
        assert pairs(pod_volumes) == ([], [("provisioned-pvc", expected)])
