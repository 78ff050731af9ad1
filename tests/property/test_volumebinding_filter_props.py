"""VolumeBinding's vectorized Filter equals FindPodVolumes asked node by node, on random clusters.

The reference is :func:`~ksched.framework.plugins.volumebinding.binder.find_pod_volumes`, upstream's
binder for one node written straight from the source. Clusters have nodes with hostnames, zones and
racks; PVs of two classes, with and without node affinity (by hostname, zone, rack, or a
``matchFields`` term), pre-bound to a claim of the pod or to another, Available or not, of several
sizes and access modes; in-tree GCE PDs whose CSI translation applies on the nodes whose CSINode
migrated the plugin; claims bound (to PVs that may be missing), unbound in a
``WaitForFirstConsumer`` class (no-provisioner, provisioning with allowed topologies, provisioning
with CSIStorageCapacity), some already given a selected node. Every node must get the same
reasons, in the same order, or both must fail with an error some node
raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.framework.plugins.volumebinding.binder import (
    BinderError,
    NodeFacts,
    find_pod_volumes,
    get_pod_volume_claims,
)
from ksched.framework.plugins.volumebinding.filtering import AffinityMasks, group_rows, volume_filter
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from tests.builders import make_node, make_pod
from tests.storage_builders import (
    add_storage,
    claim_volume,
    make_capacity,
    make_csi_driver,
    make_csi_node,
    make_pv,
    make_pvc,
    make_storage_class,
)

HOST, ZONE, RACK = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack"
ZONES, RACKS, SIZES = ("z1", "z2", "z3"), ("r1", "r2"), ("1Gi", "2Gi", "5Gi", "10Gi")
CLASSES = [
    make_storage_class("wait"),
    make_storage_class("other"),
    make_storage_class("prov", provisioner="example.com/prov", allowed_topologies={ZONE: ["z1", "z2"]}),
    make_storage_class("cap", provisioner="cap.example.com"),
]
MODES = (["ReadWriteOnce"], ["ReadWriteMany"], [])


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 10))):
        labels = {HOST: f"n{i}"}
        zone = draw(st.sampled_from((*ZONES, None)))
        if zone:
            labels[ZONE] = zone
        rack = draw(st.sampled_from((*RACKS, None)))
        if rack:
            labels[RACK] = rack
        out.append(make_node(f"n{i}", labels=labels))
    return out


@st.composite
def affinity(draw: st.DrawFn, n_nodes: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(("none", "host", "zone", "rack", "two-terms", "field")))
    if kind == "none":
        return {}
    if kind == "host":
        return {"affinity": {HOST: [f"n{draw(st.integers(0, n_nodes))}"]}}
    if kind == "zone":
        return {
            "affinity": {ZONE: draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))}
        }
    if kind == "rack":
        return {"affinity": {RACK: [draw(st.sampled_from(RACKS))], ZONE: [draw(st.sampled_from(ZONES))]}}
    if kind == "field":
        op = draw(st.sampled_from(("In", "NotIn")))
        return {"terms": [{"matchFields": [{"key": "metadata.name", "operator": op, "values": ["n0"]}]}]}
    return {
        "terms": [
            {"matchExpressions": [{"key": RACK, "operator": "In", "values": ["r1"]}]},
            {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["z1"]}]},
        ]
    }


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    node_list = draw(nodes())
    n = len(node_list)
    n_claims = draw(st.integers(1, 4))
    claims, pvs, csi_nodes = [], [], []
    for i in range(n_claims):
        name = f"c{i}"
        kind = draw(st.sampled_from(("bound", "wait", "wait", "prov", "cap")))
        if kind == "bound":
            pv_name = f"bound-{i}"
            claims.append(make_pvc(name, storage_class="wait", volume_name=pv_name, bound=True))
            if draw(st.booleans()):
                gce = draw(st.booleans())
                extra: dict[str, Any] = {}
                if gce:
                    extra = {
                        "source": {"gcePersistentDisk": {"pdName": pv_name}},
                        "labels": {ZONE: draw(st.sampled_from(ZONES))},
                    }
                pvs.append(
                    make_pv(
                        pv_name,
                        storage_class="wait",
                        phase="Bound",
                        claim=("default", name, ""),
                        **draw(affinity(n)),
                        **extra,
                    )
                )
            continue
        selected = draw(st.sampled_from((None, None, None, "n0", f"n{n}")))
        cls = {"wait": draw(st.sampled_from(("wait", "other"))), "prov": "prov", "cap": "cap"}[kind]
        claims.append(
            make_pvc(
                name,
                storage_class=cls,
                request=draw(st.sampled_from(SIZES)),
                access_modes=draw(st.sampled_from(MODES)),
                selected_node=selected,
            )
        )
    for j in range(draw(st.integers(0, 8))):
        claim_ref = draw(st.sampled_from((None, None, None, "c0", "c1", "someone")))
        pvs.append(
            make_pv(
                f"pv-{j}",
                storage_class=draw(st.sampled_from(("wait", "other", "prov"))),
                capacity=draw(st.sampled_from(SIZES)),
                access_modes=draw(st.sampled_from((["ReadWriteOnce"], ["ReadWriteOnce", "ReadWriteMany"]))),
                phase=draw(st.sampled_from(("Available", "Available", "Released"))),
                claim=("default", claim_ref, "") if claim_ref else None,
                terminating=draw(st.booleans()) and draw(st.booleans()),
                **draw(affinity(n)),
            )
        )
    for node in node_list:
        if draw(st.booleans()):
            csi_nodes.append(make_csi_node(node["metadata"]["name"], migrated="kubernetes.io/gce-pd"))
    capacities = [
        make_capacity(f"cap-{z}", "cap", node_labels={ZONE: z}, capacity=draw(st.sampled_from(SIZES)))
        for z in draw(st.lists(st.sampled_from(ZONES), max_size=3, unique=True))
    ]
    storage = dict(
        pvs=pvs,
        pvcs=claims,
        classes=CLASSES,
        csi_nodes=csi_nodes,
        csi_drivers=[make_csi_driver("cap.example.com", storage_capacity=True)],
        capacities=capacities,
    )
    return node_list, storage


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_vectorized_filter_equals_find_pod_volumes_per_node(
    case: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    node_list, storage = case
    cache = ClusterCache()
    for raw in node_list:
        cache.add_node(node_from_dict(raw))
    add_storage(cache, **storage)
    pod = pod_from_dict(make_pod("p", volumes=[claim_volume(c["metadata"]["name"]) for c in storage["pvcs"]]))
    claims = get_pod_volume_claims(pod, cache.volumes)
    assert not claims.immediate
    store = cache.volumes
    expected: dict[int, list[str]] = {}
    errors: set[str] = set()
    for name, row in cache.nodes.row_of.items():
        node = cache.nodes.node(row)
        try:
            _, reasons = find_pod_volumes(
                claims, NodeFacts(name, node.labels, store.csi_nodes.get(name)), store
            )
        except BinderError as exc:
            errors.add(str(exc))
            continue
        expected[row] = reasons
    try:
        fr = volume_filter(claims, cache, AffinityMasks())
    except BinderError as exc:
        assert str(exc) in errors  # upstream reports whichever node errs first
        return
    assert not errors
    for row, reasons in expected.items():
        assert fr.reasons_at(row)[0] == reasons, cache.nodes.node(row).name


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 140), st.integers(1, 40), st.sampled_from((0.05, 0.5)), st.integers(0, 2**32 - 1))
def test_group_rows_partitions_columns_by_their_bits(k: int, n: int, density: float, seed: int) -> None:
    """Columns share a group exactly when their bits are equal, whatever the number of features
    (one word, several) and however sparse, and each group's representative is one of its
    columns. Few distinct columns, so groups have several members."""
    rng = np.random.default_rng(seed)
    distinct = rng.random((k, int(rng.integers(1, 6)))) < density
    features = distinct[:, rng.integers(0, distinct.shape[1], n)]
    first, inverse = group_rows(features)
    assert sorted(set(inverse.tolist())) == list(range(len(first)))
    assert [int(inverse[f]) for f in first] == list(range(len(first)))
    columns = [tuple(features[:, i]) for i in range(n)]
    for i in range(n):
        for j in range(n):
            assert (inverse[i] == inverse[j]) == (columns[i] == columns[j])
