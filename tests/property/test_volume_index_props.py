"""The volume index stays equal to a recount, and the vectorized volume filters equal upstream's
per-node code, under any sequence of cluster changes.

Random sequences of node add/remove, pod add/update/assume/remove, and PV, claim, class, CSINode
and VolumeAttachment upserts and deletes (in any order: pods may arrive before the objects they
name). Afterwards:

- the index (per node: volumes per driver, limits, CSINode presence, each volume's users, the
  attachments, the pods whose volumes cannot be counted, the inline disks; the claim references)
  equals the one a fresh cache builds from the same final objects;
- for incoming pods drawn from the same pool, NodeVolumeLimits' and VolumeRestrictions' disk
  verdicts on every row equal :mod:`tests.property.volume_reference`, node by node, also inside
  a what-if overlay that takes some pods away, which must leave the index as it found it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cache.cluster import ClusterCache
from ksched.cache.volume_index import NO_LIMIT
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.nodevolumelimits import NodeVolumeLimits, VolumeCountError
from ksched.framework.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import DECODERS
from tests import builders
from tests.builders import claim_volume, ephemeral_volume, inline_volume, make_pod
from tests.property import volume_reference as ref

NODES = [f"n{i}" for i in range(3)]
PODS = [f"p{i}" for i in range(5)]
D1, D2, AWS = "d1.example.com", "d2.example.com", "kubernetes.io/aws-ebs"

PV_SPECS: list[dict[str, Any]] = [
    {"csi": (D1, "h0")},
    {"csi": (D1, "h1")},
    {"csi": (D1, "h0")},  # the same handle under another name: one volume
    {"csi": (D2, "h0")},
    {"awsElasticBlockStore": {"volumeID": "vol-a"}},
    {"awsElasticBlockStore": {"volumeID": "aws://zone/vol-b"}},
    {"awsElasticBlockStore": {"volumeID": "aws://bad"}},
    {"hostPath": {"path": "/tmp"}},
]
CLASS_SPECS = [D1, D2, AWS, "", "kubernetes.io/azure-file"]
CSI_NODE_SPECS: list[dict[str, int | None]] = [{}, {D1: 1}, {D1: 2, D2: 0}, {D1: 0}, {D2: None, D1: 3}]
VOLUMES: list[dict[str, Any]] = [
    claim_volume("c0"),
    claim_volume("c1"),
    claim_volume("c2"),
    claim_volume("c3"),
    claim_volume("c4"),
    ephemeral_volume("e"),
    inline_volume("awsElasticBlockStore", "a1", volumeID="vol-a"),
    inline_volume("awsElasticBlockStore", "a2", volumeID="aws://bad"),
    inline_volume("gcePersistentDisk", "g1", pdName="pd", readOnly=True),
    inline_volume("gcePersistentDisk", "g2", pdName="pd"),
    inline_volume("rbd", "r1", monitors=["m1", "m2"], pool="p", image="i", readOnly=True),
]

names = st.integers(0, 3)
node_ix = st.integers(0, len(NODES) - 1)
pod_ix = st.integers(0, len(PODS) - 1)
volumes = st.lists(st.integers(0, len(VOLUMES) - 1), max_size=3, unique=True)
op = st.one_of(
    st.tuples(st.just("node+"), node_ix),
    st.tuples(st.just("node-"), node_ix),
    st.tuples(st.just("node~"), node_ix),
    st.tuples(st.just("pod+"), pod_ix, st.integers(0, len(NODES)), volumes, st.booleans()),
    st.tuples(st.just("pod+"), pod_ix, node_ix, volumes, st.just(False)),
    st.tuples(st.just("pod-"), pod_ix),
    st.tuples(st.just("pv"), names, st.none() | st.integers(0, len(PV_SPECS) - 1)),
    st.tuples(st.just("pv"), names, st.integers(0, len(PV_SPECS) - 1)),
    st.tuples(
        st.just("pvc"),
        names,
        st.none() | st.tuples(st.none() | names, st.none() | st.integers(0, 2), st.booleans()),
    ),
    st.tuples(st.just("ephemeral"), pod_ix, st.none() | st.booleans()),
    st.tuples(st.just("class"), st.integers(0, 2), st.none() | st.integers(0, len(CLASS_SPECS) - 1)),
    st.tuples(st.just("csinode"), node_ix, st.none() | st.integers(0, len(CSI_NODE_SPECS) - 1)),
    st.tuples(
        st.just("va"),
        st.integers(0, 3),
        st.none() | st.tuples(node_ix, st.sampled_from([D1, D2, ""]), st.none() | names),
    ),
)


def _pod(i: int, node: str, vols: list[int], assumed: bool = False) -> Pod:
    raw = make_pod(
        PODS[i], uid=f"u{i}", node_name="" if assumed else node, volumes=[VOLUMES[v] for v in vols]
    )
    return pod_from_dict(raw)


def _upsert(cache: ClusterCache, raw: dict[str, Any]) -> None:
    resource, decode = DECODERS[raw["kind"]]
    cache.volumes.upsert(resource, decode(raw))


def apply(cache: ClusterCache, step: tuple[Any, ...]) -> None:
    kind = step[0]
    store = cache.volumes
    if kind == "node+":
        cache.add_node(builders.node(NODES[step[1]], pods=20))
    elif kind == "node-":
        cache.remove_node(NODES[step[1]])
    elif kind == "node~":  # gone and back: its row may be another one now
        cache.remove_node(NODES[step[1]])
        cache.add_node(builders.node(NODES[step[1]], pods=20))
    elif kind == "pod+":
        _, i, n, vols, assumed = step
        node = NODES[n] if n < len(NODES) else "gone"
        pod = _pod(i, node, vols, assumed)
        uid = pod.uid
        if uid in cache:
            cache.remove_pod(uid)
        if assumed:
            cache.assume(pod, node)
        else:
            cache.add_pod(pod)
    elif kind == "pod-":
        cache.remove_pod(f"u{step[1]}")
    elif kind == "pv":
        _, j, spec = step
        if spec is None:
            store.delete("persistentvolumes", f"pv{j}")
        else:
            _upsert(cache, builders.make_pv(f"pv{j}", **PV_SPECS[spec]))
    elif kind == "pvc":
        _, j, spec = step
        if spec is None:
            store.delete("persistentvolumeclaims", f"default/c{j}")
        else:
            pv, cls, rwop = spec
            _upsert(
                cache,
                builders.make_pvc(
                    f"c{j}",
                    volume_name="" if pv is None else f"pv{pv}",
                    storage_class=None if cls is None else f"s{cls}",
                    access_modes=["ReadWriteOncePod"] if rwop else [],
                ),
            )
    elif kind == "ephemeral":
        _, i, owned = step
        if owned is None:
            store.delete("persistentvolumeclaims", f"default/{PODS[i]}-e")
        else:
            owner = f"u{i}" if owned else "someone-else"
            _upsert(cache, builders.make_pvc(f"{PODS[i]}-e", storage_class="s0", owner_uid=owner))
    elif kind == "class":
        _, j, spec = step
        if spec is None:
            store.delete("storageclasses", f"s{j}")
        else:
            _upsert(cache, builders.make_storage_class(f"s{j}", provisioner=CLASS_SPECS[spec]))
    elif kind == "csinode":
        _, n, spec = step
        if spec is None:
            store.delete("csinodes", NODES[n])
        else:
            _upsert(cache, builders.make_csi_node(NODES[n], CSI_NODE_SPECS[spec]))
    elif kind == "va":
        _, j, spec = step
        if spec is None:
            store.delete("volumeattachments", f"va{j}")
        else:
            n, attacher, pv = spec
            raw = builders.make_volume_attachment(
                f"va{j}", node=NODES[n], attacher=attacher, pv=None if pv is None else f"pv{pv}"
            )
            _upsert(cache, raw)


def rebuilt(cache: ClusterCache) -> ClusterCache:
    """A fresh cache with the same nodes, objects and pods, put in in one canonical order."""
    fresh = ClusterCache()
    for name in sorted(cache.nodes.row_of):
        fresh.add_node(cache.node(cache.nodes.row_of[name]))
    store = cache.volumes
    for kind, table in (("persistentvolumes", store.pvs), ("persistentvolumeclaims", store.pvcs)):
        for obj in table.values():
            fresh.volumes.upsert(kind, obj)
    for kind, objects in (
        ("storageclasses", store.classes),
        ("csinodes", store.csi_nodes),
        ("volumeattachments", store.attachments),
    ):
        for obj in objects.values():
            fresh.volumes.upsert(kind, obj)
    for uid in sorted(cache.pods):
        entry = cache.pods[uid]
        if entry.assumed:
            fresh.assume(entry.pod, entry.node_name)
        else:
            fresh.add_pod(entry.pod)
    return fresh


def by_node(cache: ClusterCache) -> dict[str, Any]:
    """The index's state with rows replaced by node names."""
    index = cache.volume_index
    st_ = index.state()
    name = {r: cache.nodes.node(r).name for r in range(cache.n_rows) if cache.nodes.valid[r]}
    drivers = {
        d: {name[r]: (c[r], lim[r]) for r in name if c[r] or lim[r] >= 0}
        for d, (c, lim) in st_["drivers"].items()  # type: ignore[attr-defined]
    }
    return {
        "drivers": {d: v for d, v in drivers.items() if v},
        "csi": {name[r] for r in name if st_["csi_node"][r]},  # type: ignore[index]
        "refs": {name[r]: v for r, v in st_["refs"].items()},  # type: ignore[attr-defined]
        "va_refs": {name[r]: v for r, v in st_["va_refs"].items()},  # type: ignore[attr-defined]
        "errors": {name[r]: v for r, v in st_["errors"].items()},  # type: ignore[attr-defined]
        "disks": {k: {name[r]: c for r, c in rows.items()} for k, rows in st_["disks"].items()},  # type: ignore[attr-defined]
        "claims": st_["claims"],
    }


def pod_errors(cache: ClusterCache, node: str) -> set[str]:
    csi_node = cache.volumes.csi_nodes.get(node)
    out = set()
    for p in cache.pods_on(node):
        try:
            ref.filter_attachable(cache, p, csi_node, False, {})
        except ref.Failed as exc:
            out.add(str(exc))
    return out


def check_counts(cache: ClusterCache) -> None:
    """The index's per-driver counts against the reference's recount, node by node."""
    index = cache.volume_index
    for name, row in cache.nodes.row_of.items():
        got = {d: int(index.counts[c, row]) for d, c in ((d, index.column(d)) for d in index.drivers)}
        assert {d: n for d, n in got.items() if n} == dict(ref.attached_counts(cache, name)), name
        for c in range(len(index.drivers)):
            limit, count = int(index.limits[c, row]), int(index.counts[c, row])
            assert int(index.room[c, row]) == (limit - count if limit >= 0 else NO_LIMIT), name


def check_filters(cache: ClusterCache, incoming: Pod, users: Counter[str], removed: list[Pod]) -> None:
    rows = {cache.nodes.node(r).name: r for r in range(cache.n_rows) if cache.nodes.valid[r]}
    want = {n: ref.csi_filter(cache, incoming, n) for n in rows}
    errors = {w[1] for w in want.values() if w is not None and w[0] == "Error"}
    if errors:  # any uncountable pod of an erroring node may be the one reported
        errors |= {
            e for n, w in want.items() if w is not None and w[0] == "Error" for e in pod_errors(cache, n)
        }
    try:
        result = NodeVolumeLimits().filter(CycleState(), incoming, cache)
    except VolumeCountError as exc:
        assert str(exc) in errors, (str(exc), want)
    else:
        assert not errors, want
        for n, r in rows.items():
            reasons, code = result.reasons_at(r)
            got = None if not reasons else (code.label, ", ".join(reasons))
            assert got == want[n], (n, got, want[n])
    plugin = VolumeRestrictions()
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, cache)
    rwop = ref.rwop_filter(cache, incoming, users, removed)
    if status.code == Code.SKIP or not status.ok:
        assert rwop == ("skip" if status.ok or status.code == Code.SKIP else "missing")
        return
    fr = plugin.filter(state, incoming, cache)
    for n, r in rows.items():
        reasons = fr.reasons_at(r)[0]
        disk = ref.disk_filter(cache, incoming, n)
        assert (ERR_REASON_DISK_CONFLICT in reasons) == disk, n
        assert (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT in reasons) == (not disk and rwop is True), n


claim_spec = st.tuples(st.none() | names, st.none() | st.integers(0, 2), st.booleans())
initial = st.fixed_dictionaries(
    {
        "pvs": st.lists(st.integers(0, len(PV_SPECS) - 1), min_size=4, max_size=4),
        "claims": st.lists(claim_spec, min_size=5, max_size=5),
        "classes": st.lists(st.integers(0, len(CLASS_SPECS) - 1), min_size=3, max_size=3),
        "csinodes": st.lists(st.none() | st.integers(0, len(CSI_NODE_SPECS) - 1), min_size=3, max_size=3),
        "vas": st.lists(
            st.tuples(node_ix, st.sampled_from([D1, D2, ""]), st.none() | names), min_size=2, max_size=2
        ),
        "ephemeral": st.lists(st.none() | st.booleans(), min_size=5, max_size=5),
        "pods": st.lists(st.tuples(node_ix, volumes), min_size=5, max_size=5),
        "pods_first": st.booleans(),
    }
)


def populate(cache: ClusterCache, init: dict[str, Any]) -> None:
    """Every node, a dense set of objects and pods (objects first or pods first)."""
    objects: list[tuple[Any, ...]] = [("pv", j, spec) for j, spec in enumerate(init["pvs"])]
    objects += [("pvc", j, spec) for j, spec in enumerate(init["claims"])]
    objects += [("class", j, spec) for j, spec in enumerate(init["classes"])]
    objects += [("csinode", n, spec) for n, spec in enumerate(init["csinodes"])]
    objects += [("va", j, spec) for j, spec in enumerate(init["vas"])]
    objects += [("ephemeral", i, owned) for i, owned in enumerate(init["ephemeral"])]
    pods = [("pod+", i, n, vols, False) for i, (n, vols) in enumerate(init["pods"])]
    for step in [("node+", i) for i in range(len(NODES))] + (
        pods + objects if init["pods_first"] else objects + pods
    ):
        apply(cache, step)


@settings(max_examples=250, deadline=None)
@given(
    init=initial,
    steps=st.lists(op, max_size=25),
    incoming=st.lists(volumes, min_size=1, max_size=3),
    taken=st.lists(pod_ix, max_size=3, unique=True),
)
def test_index_is_a_recount_and_filters_match_upstream(
    init: dict[str, Any], steps: list[tuple[Any, ...]], incoming: list[list[int]], taken: list[int]
) -> None:
    cache = ClusterCache()
    populate(cache, init)
    for step in steps:
        apply(cache, step)
    assert by_node(cache) == by_node(rebuilt(cache))
    check_counts(cache)
    pods = [
        _pod(len(PODS) - 1 - k, "", vols) for k, vols in enumerate(incoming)
    ]  # their ephemeral claims may exist
    users = ref.claim_users(cache)
    for p in pods:
        check_filters(cache, p, users, [])
    before = by_node(cache)
    gone = [f"u{i}" for i in taken if f"u{i}" in cache]
    removed = [cache.pods[uid].pod for uid in gone if cache.pods[uid].row >= 0]
    with cache.what_if(remove=gone):
        for p in pods:
            check_filters(cache, p, users, removed)
    assert by_node(cache) == before
    assert not cache.volume_index.overlay_claims and not cache.volume_index.overlay_claim_names
