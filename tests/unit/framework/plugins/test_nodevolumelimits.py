"""NodeVolumeLimits, ported from upstream ``nodevolumelimits/csi_test.go``: TestCSILimits (33 cases:
CSI limits with shared volumes, migrated in-tree PVs and inline volumes, generic ephemeral volumes,
unbound claims, VolumeAttachments, missing objects), the four queueing-hint tables, and a few
cases of our own (the incremental index, errors on existing pods, a run through the framework).

Upstream's fixture, rebuilt here: for each driver of a case, four PVs and four claims
``csi-<driver>-<j>`` bound to each other (a CSI PV with that handle; an in-tree AWS EBS or
hostPath source for those "drivers"), claims ``csi-4`` (unbound, class ``csi-sc``), ``csi-5`` (no
class) and ``csi-6`` (bound to a PV that does not exist), the class ``csi-sc`` provisioned by the
case's first driver, ``vaCount`` VolumeAttachments per driver to PVs ``csi-<driver>-<j>``, and a
CSINode whose drivers have the case's limit (``csinode``), no limit (``no-limit``) or no CSINode
at all (``none``), with AWS EBS migration announced on it.

Upstream's fake listers word a missing claim ``persistentvolumeclaims "x" not found``; the real
lister, and ksched, say ``persistentvolumeclaim "x" not found``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework.interface import Code, CycleState, QueueingHint
from ksched.framework.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    VolumeCountError,
    hints,
)
from ksched.framework.profile import build_profiles
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import csi_node_from_dict, pvc_from_dict, volume_attachment_from_dict
from ksched.scheduler.events_registry import DEFAULT_PLUGIN_EVENTS, events_of_plugin
from tests.builders import (
    claim_volume,
    cluster_of,
    ephemeral_volume,
    inline_volume,
    make_csi_node,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    make_volume_attachment,
    store_objects,
)

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH = "kubernetes.io/hostpath"
NODE = "node-for-max-pd-test-1"
SC = "csi-sc"
UNSCHED = (Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
MISSING_EPHEMERAL = (
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',
)
NOT_OWNER = (Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")


def _pod(
    name: str, *volumes: dict[str, Any], namespace: str = "default", uid: str | None = None
) -> dict[str, Any]:
    return make_pod(name, namespace=namespace, uid=uid, volumes=list(volumes))


def _claims(name: str, *claims: str) -> dict[str, Any]:
    return _pod(name, *(claim_volume(c) for c in claims))


CONFIGMAP = {"name": "cm", "configMap": {"name": "cm"}}
SECRET = {"name": "s", "secret": {"secretName": "s"}}

POD = {
    "running": _claims("running", f"csi-{EBS}-3"),
    "pending": _claims("pending", "csi-4"),
    "unbound2": _claims("unbound2", "csi-4"),
    "missingPV": _claims("missing-pv", "csi-6"),
    "noSC": _claims("no-sc", "csi-5"),
    "gceTwo": _claims("gce-two", f"csi-{GCE}-1", f"csi-{GCE}-2"),
    "inTreeOne": _claims("in-tree-one", f"csi-{AWS_IN_TREE}-0"),
    "inTreeTwo": _claims("in-tree-two", f"csi-{AWS_IN_TREE}-1", f"csi-{AWS_IN_TREE}-2"),
    "ebsOne": _claims("ebs-one", f"csi-{EBS}-0"),
    "ebsTwo": _claims("ebs-two", f"csi-{EBS}-1", f"csi-{EBS}-2"),
    "hostpathOne": _claims("hostpath-one", f"csi-{HOSTPATH}-0"),
    "ephemeral": _pod("abc", ephemeral_volume("xyz"), namespace="test", uid="12345"),
    "ephemeralTwo": _pod(
        "abc", ephemeral_volume("x"), ephemeral_volume("y"), namespace="test", uid="12345II"
    ),
    "inline": _pod("inline", inline_volume("awsElasticBlockStore", volumeID="aws-inline1")),
    "inlineSameID": _pod("inline-same", inline_volume("awsElasticBlockStore", volumeID=f"csi-{EBS}-1")),
    "onlyConfigmapSecret": _pod("cm-secret", CONFIGMAP, SECRET),
    "pvcConfigmapSecret": _pod("pvc-cm-secret", CONFIGMAP, SECRET, claim_volume(f"csi-{EBS}-0")),
    "ephemeralConfigmapSecret": _pod("abc", CONFIGMAP, SECRET, ephemeral_volume("xyz"), namespace="test"),
    "inlineConfigmapSecret": _pod(
        "inline-cm-secret", CONFIGMAP, SECRET, inline_volume("awsElasticBlockStore", volumeID="aws-inline1")
    ),
}

EPHEMERAL_CLAIM = make_pvc("abc-xyz", namespace="test", storage_class=SC, owner_uid="12345")
CONFLICTING_CLAIM = make_pvc("abc-xyz", namespace="test", storage_class=SC)
EPHEMERAL_X = make_pvc("abc-x", namespace="test", storage_class=SC, owner_uid="12345II")
EPHEMERAL_Y = make_pvc("abc-y", namespace="test", storage_class=SC, owner_uid="12345II")


def fixture_objects(
    drivers: list[str], limit_source: str, max_vols: int, va_count: int
) -> list[dict[str, Any]]:
    """Upstream's listers for one case (see the module docstring)."""
    objs: list[dict[str, Any]] = []
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            if driver == AWS_IN_TREE:
                objs.append(make_pv(name, awsElasticBlockStore={"volumeID": name}))
            elif driver == HOSTPATH:
                objs.append(make_pv(name, hostPath={"path": "/tmp"}))
            else:
                objs.append(make_pv(name, csi=(driver, name)))
            objs.append(make_pvc(name, volume_name=name))
        for j in range(va_count):
            objs.append(
                make_volume_attachment(f"va-{driver}-{j}", node=NODE, attacher=driver, pv=f"csi-{driver}-{j}")
            )
    objs.append(make_pvc("csi-4", storage_class=SC))
    objs.append(make_pvc("csi-5"))
    objs.append(make_pvc("csi-6", storage_class=SC, volume_name="missing-in-action"))
    objs.append(make_storage_class(SC, provisioner=drivers[0]))
    if limit_source in ("csinode", "no-limit"):
        limit = max_vols if limit_source == "csinode" else None
        objs.append(make_csi_node(NODE, dict.fromkeys(drivers, limit), migrated=[AWS_IN_TREE]))
    return objs


def run(
    new: dict[str, Any],
    existing: list[dict[str, Any]],
    *,
    drivers: list[str],
    max_vols: int = 0,
    limit_source: str = "csinode",
    va_count: int = 0,
    extra_claims: tuple[dict[str, Any], ...] = (),
    storage_first: bool = True,
) -> tuple[Code, str] | str | None:
    """The case's outcome: "skip" (PreFilter), None (passes), or (code, message)."""
    cluster = cluster_of([make_node(NODE)])
    bound = [pod_from_dict({**p, "spec": {**p["spec"], "nodeName": NODE}}) for p in existing]
    objects = [*fixture_objects(drivers, limit_source, max_vols, va_count), *extra_claims]
    if storage_first:
        store_objects(cluster, objects)
    for p in bound:
        cluster.add_pod(p)
    if not storage_first:
        store_objects(cluster, objects)
    plugin = NodeVolumeLimits()
    incoming = pod_from_dict(new)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, cluster)
    if status.code == Code.SKIP:
        return "skip"
    assert status.ok
    try:
        result = plugin.filter(state, incoming, cluster)
    except VolumeCountError as exc:
        return Code.ERROR, str(exc)
    reasons, code = result.reasons_at(0)
    return None if not reasons else (code, ", ".join(reasons))


P = POD
CSI_LIMITS = [
    pytest.param(
        P["ebsOne"],
        [],
        dict(max_vols=2, drivers=[EBS], va_count=2),
        UNSCHED,
        id="should count VolumeAttachments towards volume limit when no pods exist",
    ),
    pytest.param(
        P["ebsOne"],
        [],
        dict(max_vols=2, drivers=[EBS], va_count=1),
        None,
        id="should schedule pod when VolumeAttachments count does not exceed limit",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ebsTwo"]],
        dict(max_vols=4, drivers=[EBS]),
        None,
        id="fits when node volume limit >= new pods CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS]),
        UNSCHED,
        id="doesn't when node volume limit <= pods CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS], limit_source="no-limit"),
        None,
        id="should when driver does not support volume limits",
    ),
    pytest.param(
        P["ebsOne"],
        [P["pending"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS]),
        UNSCHED,
        id="count pending PVCs towards volume limit <= pods CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["pending"], P["unbound2"], P["ebsTwo"]],
        dict(max_vols=4, drivers=[EBS]),
        None,
        id="count multiple pending pvcs towards volume limit >= pods CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["missingPV"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS]),
        UNSCHED,
        id="should count PVCs with invalid PV name but valid SC",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["noSC"]],
        dict(max_vols=2, drivers=[EBS]),
        None,
        id="don't count pvcs with missing SC towards volume limit",
    ),
    pytest.param(
        P["ebsOne"],
        [P["gceTwo"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS, GCE]),
        UNSCHED,
        id="count pvcs with the same type towards volume limit",
    ),
    pytest.param(
        P["gceTwo"],
        [P["ebsTwo"], P["running"]],
        dict(max_vols=2, drivers=[EBS, GCE]),
        None,
        id="don't count pvcs with different type towards volume limit",
    ),
    pytest.param(
        P["inTreeOne"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count in-tree volumes if migration is enabled",
    ),
    pytest.param(
        P["inline"],
        [P["inTreeTwo"]],
        dict(drivers=[AWS_IN_TREE, EBS], limit_source="none"),
        None,
        id="nil csi node",
    ),
    pytest.param(
        P["pending"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count unbound in-tree volumes if migration is enabled",
    ),
    pytest.param(
        P["inTreeOne"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS], limit_source="no-limit"),
        None,
        id="should not limit pod if volume used does not report limits",
    ),
    pytest.param(
        P["hostpathOne"],
        [P["ebsTwo"]],
        dict(max_vols=2, drivers=[HOSTPATH, EBS]),
        None,
        id="should not count non-migratable in-tree volumes",
    ),
    pytest.param(
        P["inline"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count in-tree inline volumes if migration is enabled",
    ),
    pytest.param(
        P["inTreeOne"],
        [P["ebsTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
    ),
    pytest.param(
        P["inline"],
        [P["ebsTwo"], P["inTreeOne"]],
        dict(max_vols=3, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count in-tree, inline and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
    ),
    pytest.param(
        P["inlineSameID"],
        [P["ebsTwo"], P["inTreeOne"]],
        dict(max_vols=3, drivers=[AWS_IN_TREE, EBS]),
        None,
        id="should not count in-tree, inline and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
    ),
    pytest.param(
        P["ebsOne"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
    ),
    pytest.param(
        P["ephemeral"],
        [],
        dict(drivers=[EBS], limit_source="no-limit"),
        MISSING_EPHEMERAL,
        id="ephemeral volume missing",
    ),
    pytest.param(
        P["ephemeral"],
        [],
        dict(drivers=[EBS], limit_source="no-limit", extra_claims=(CONFLICTING_CLAIM,)),
        NOT_OWNER,
        id="ephemeral volume not owned",
    ),
    pytest.param(
        P["ephemeral"],
        [],
        dict(drivers=[EBS], limit_source="no-limit", extra_claims=(EPHEMERAL_CLAIM,)),
        None,
        id="ephemeral volume unbound",
    ),
    pytest.param(
        P["ephemeral"],
        [P["running"], P["ebsTwo"]],
        dict(max_vols=2, drivers=[EBS], extra_claims=(EPHEMERAL_CLAIM,)),
        UNSCHED,
        id="ephemeral doesn't when node volume limit <= pods CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ephemeralTwo"]],
        dict(max_vols=2, drivers=[EBS], extra_claims=(EPHEMERAL_X, EPHEMERAL_Y)),
        UNSCHED,
        id="ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ephemeral"], P["ebsTwo"]],
        dict(max_vols=3, drivers=[EBS], extra_claims=(EPHEMERAL_CLAIM,)),
        UNSCHED,
        id="persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, "
        "ephemeral disabled",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ephemeral"], P["ebsTwo"]],
        dict(max_vols=3, drivers=[EBS], extra_claims=(EPHEMERAL_CLAIM,)),
        UNSCHED,
        id="persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
    ),
    pytest.param(
        P["ebsOne"],
        [P["running"], P["ephemeral"], P["ebsTwo"]],
        dict(max_vols=5, drivers=[EBS], extra_claims=(EPHEMERAL_CLAIM,)),
        None,
        id="persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
    ),
    pytest.param(
        P["onlyConfigmapSecret"],
        [],
        dict(max_vols=2, drivers=[EBS]),
        "skip",
        id="skip Filter when the pod only uses secrets and configmaps",
    ),
    pytest.param(
        P["pvcConfigmapSecret"],
        [],
        dict(max_vols=2, drivers=[EBS]),
        None,
        id="don't skip Filter when the pod has pvcs",
    ),
    pytest.param(
        P["ephemeralConfigmapSecret"],
        [],
        dict(drivers=[EBS], limit_source="no-limit"),
        MISSING_EPHEMERAL,
        id="don't skip Filter when the pod has ephemeral volumes",
    ),
    pytest.param(
        P["inlineConfigmapSecret"],
        [P["inTreeTwo"]],
        dict(max_vols=2, drivers=[AWS_IN_TREE, EBS]),
        UNSCHED,
        id="don't skip Filter when the pod has inline migratable volumes",
    ),
]


@pytest.mark.parametrize("storage_first", [True, False], ids=["objects, then pods", "pods, then objects"])
@pytest.mark.parametrize(("new", "existing", "setup", "want"), CSI_LIMITS)
def test_csi_limits(
    new: dict[str, Any], existing: list[dict[str, Any]], setup: dict[str, Any], want: Any, storage_first: bool
) -> None:
    assert run(new, existing, storage_first=storage_first, **setup) == want


# ----------------------------------------------------------------------------------------- hints
def _record(raw: dict[str, Any]) -> Pod:
    return pod_from_dict(raw)


POD_EBS = _claims("p", f"csi-{EBS}-2")
DELETED = [
    pytest.param(
        _claims("d", "placeholder"),
        True,
        QueueingHint.QUEUE,
        id="return a Queue when a deleted pod has a PVC",
    ),
    pytest.param(
        _pod("d", inline_volume("awsElasticBlockStore")),
        True,
        QueueingHint.QUEUE,
        id="return a Queue when a deleted pod has a inline migratable volume",
    ),
    pytest.param(
        _pod("d"),
        True,
        QueueingHint.QUEUE_SKIP,
        id="return a QueueSkip when a deleted pod doesn't have any volume",
    ),
    pytest.param(
        _claims("d", f"csi-{EBS}-0"),
        False,
        QueueingHint.QUEUE_SKIP,
        id="return a QueueSkip when a deleted pod is not scheduled.",
    ),
]


@pytest.mark.parametrize(("deleted", "scheduled", "want"), DELETED)
def test_hint_after_pod_deleted(deleted: dict[str, Any], scheduled: bool, want: QueueingHint) -> None:
    if scheduled:
        deleted = {**deleted, "spec": {**deleted["spec"], "nodeName": NODE}}
    assert hints.after_pod_deleted(_record(POD_EBS), _record(deleted), None) == want


ADDED = [
    pytest.param(
        _pod("p", namespace="ns1"),
        make_pvc("x", namespace="ns2"),
        QueueingHint.QUEUE_SKIP,
        id="a pod isn't in the same namespace as an added PVC",
    ),
    pytest.param(
        _pod("p", claim_volume("pvc1"), namespace="ns1"),
        make_pvc("pvc1", namespace="ns1"),
        QueueingHint.QUEUE,
        id="a pod is in the same namespace as an added PVC",
    ),
    pytest.param(
        _pod("pod1", ephemeral_volume("ephemeral"), namespace="ns1"),
        make_pvc("pod1-ephemeral", namespace="ns1"),
        QueueingHint.QUEUE,
        id="a pod has an ephemeral volume related to an added PVC",
    ),
    pytest.param(
        _pod("p", claim_volume("pvc1"), namespace="ns1"),
        make_pvc("pvc2", namespace="ns1"),
        QueueingHint.QUEUE_SKIP,
        id="a pod doesn't have the same PVC as an added PVC",
    ),
    pytest.param(
        _pod("p", namespace="ns1"),
        make_pvc("pvc2", namespace="ns1"),
        QueueingHint.QUEUE_SKIP,
        id="a pod doesn't have any PVC attached",
    ),
]


@pytest.mark.parametrize(("pod", "claim", "want"), ADDED)
def test_hint_after_claim_added(pod: dict[str, Any], claim: dict[str, Any], want: QueueingHint) -> None:
    assert hints.after_claim_added(_record(pod), None, pvc_from_dict(claim)) == want


VA_PV = make_volume_attachment(
    "volumeattachment1", node="fake-node", attacher="test.storage.gke.io", pv="pv1"
)
VA_INLINE = make_volume_attachment("volumeattachment1", node="fake-node", attacher=EBS, pv=None)
AWS_TEST = inline_volume("awsElasticBlockStore", volumeID="test")
VA_DELETED = [
    pytest.param(
        _pod("p", claim_volume("pvc1"), namespace="ns1"),
        VA_PV,
        QueueingHint.QUEUE,
        id="a pod has PVC when VolumeAttachment is deleting",
    ),
    pytest.param(
        _pod("p", AWS_TEST, namespace="ns1"),
        VA_INLINE,
        QueueingHint.QUEUE,
        id="a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) "
        "is deleting (match)",
    ),
    pytest.param(
        _pod("p", inline_volume("gcePersistentDisk", pdName="test"), namespace="ns1"),
        VA_INLINE,
        QueueingHint.QUEUE_SKIP,
        id="a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) "
        "is deleting (no match)",
    ),
    pytest.param(
        _pod("p", AWS_TEST, claim_volume("pvc1"), namespace="ns1"),
        VA_INLINE,
        QueueingHint.QUEUE,
        id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment "
        "(AWSEBSDriver) is deleting",
    ),
    pytest.param(
        _pod("p", AWS_TEST, claim_volume("pvc1"), namespace="ns1"),
        VA_PV,
        QueueingHint.QUEUE,
        id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment "
        "(AWSEBSDriver)  is deleting",
    ),
    pytest.param(
        _pod("p", namespace="ns1"),
        VA_PV,
        QueueingHint.QUEUE_SKIP,
        id="a pod has no PVC when VolumeAttachment is deleting",
    ),
]


@pytest.mark.parametrize(("pod", "va", "want"), VA_DELETED)
def test_hint_after_attachment_deleted(pod: dict[str, Any], va: dict[str, Any], want: QueueingHint) -> None:
    assert hints.after_attachment_deleted(_record(pod), volume_attachment_from_dict(va), None) == want


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        pytest.param(1, 2, QueueingHint.QUEUE, id="limit raised, queue"),
        pytest.param(2, 1, QueueingHint.QUEUE_SKIP, id="limit decreased, skip queueing"),
        pytest.param(1, 1, QueueingHint.QUEUE_SKIP, id="limit unchanged, skip queueing"),
    ],
)
def test_hint_after_csi_node_updated(before: int, after: int, want: QueueingHint) -> None:
    old = csi_node_from_dict(make_csi_node("test-node", {EBS: before}))
    new = csi_node_from_dict(make_csi_node("test-node", {EBS: after}))
    assert hints.after_csi_node_updated(_record(_claims("test-pod", f"csi-{EBS}-0")), old, new) == want


def test_hints_answer_queue_for_objects_of_the_wrong_type() -> None:
    p = _record(POD_EBS)
    assert hints.after_pod_deleted(p, "not-a-pod", None) == QueueingHint.QUEUE
    assert hints.after_claim_added(p, None, "not-a-pvc") == QueueingHint.QUEUE
    assert hints.after_attachment_deleted(p, "not-a-va", None) == QueueingHint.QUEUE
    assert hints.after_csi_node_updated(p, None, "not-a-csinode") == QueueingHint.QUEUE


def test_events_are_the_hints_keys() -> None:
    plugin = NodeVolumeLimits()
    assert plugin.events_to_register() == list(plugin.queueing_hints())
    assert events_of_plugin(plugin) == DEFAULT_PLUGIN_EVENTS[plugin.name]


# ----------------------------------------------------------------------------------------- ours
def _limited(n_nodes: int, limit: int) -> ClusterCache:
    cluster = cluster_of([make_node(f"n{i}", pods=10) for i in range(n_nodes)])
    objs = [make_csi_node(f"n{i}", {EBS: limit}) for i in range(n_nodes)]
    for j in range(6):
        objs += [make_pv(f"pv{j}", csi=(EBS, f"h{j}")), make_pvc(f"c{j}", volume_name=f"pv{j}")]
    return store_objects(cluster, objs)


def _bound(name: str, node: str, *claims: str) -> Pod:
    raw = _claims(name, *claims)
    return pod_from_dict({**raw, "spec": {**raw["spec"], "nodeName": node}})


def _verdicts(cluster: ClusterCache, incoming: Pod) -> list[bool]:
    result = NodeVolumeLimits().filter(CycleState(), incoming, cluster)
    return [not result.reasons_at(r)[0] for r in range(cluster.n_rows)]


def test_counts_follow_pods_claims_and_csinodes() -> None:
    cluster = _limited(3, 2)
    incoming = pod_from_dict(_claims("new", "c5"))
    cluster.add_pod(_bound("a", "n0", "c0", "c1"))
    cluster.add_pod(_bound("b", "n1", "c0"))
    cluster.add_pod(_bound("c", "n1", "c0"))  # the same volume twice on n1: counted once
    assert _verdicts(cluster, incoming) == [False, True, True]
    assert _verdicts(cluster, pod_from_dict(_claims("shares", "c1"))) == [True, True, True]
    cluster.remove_pod("uid-default-a")
    assert _verdicts(cluster, incoming) == [True, True, True]
    cluster.add_pod(_bound("a", "n0", "c0", "c1"))
    store_objects(cluster, [make_csi_node("n0", {EBS: 3})])  # the limit rises
    assert _verdicts(cluster, incoming) == [True, True, True]
    store_objects(cluster, [make_pvc("c1", volume_name="pv0")])  # c1 now names pv0: one volume on n0
    store_objects(cluster, [make_csi_node("n0", {EBS: 1})])
    assert _verdicts(cluster, incoming) == [False, True, True]
    cluster.remove_node("n0")
    assert cluster.volume_index.counts[0, 0] == 0


def test_a_pod_on_a_limited_node_whose_volumes_cannot_be_counted_is_an_error() -> None:
    cluster = _limited(1, 5)
    store_objects(cluster, [CONFLICTING_CLAIM])
    raw = _pod("abc", ephemeral_volume("xyz"), namespace="test", uid="other")
    cluster.add_pod(pod_from_dict({**raw, "spec": {**raw["spec"], "nodeName": "n0"}}))
    with pytest.raises(VolumeCountError, match="pod is not owner"):
        NodeVolumeLimits().filter(CycleState(), pod_from_dict(_claims("new", "c0")), cluster)


def test_malformed_claim_is_reported_instead_of_not_found() -> None:
    cluster = _limited(1, 5)
    cluster.volumes.problems[("persistentvolumeclaims", "default/bad")] = (
        "PersistentVolumeClaim default/bad: spec.accessModes[0]: 'Sometimes' is not one of ..."
    )
    result = NodeVolumeLimits().filter(CycleState(), pod_from_dict(_claims("new", "bad")), cluster)
    reasons, code = result.reasons_at(0)
    assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reasons == [
        "looking up PVC default/bad: PersistentVolumeClaim default/bad: spec.accessModes[0]: "
        "'Sometimes' is not one of ..."
    ]


OTHER_VOLUME_PLUGINS = ("VolumeRestrictions", "VolumeBinding", "VolumeZone")
LIMITS_ONLY = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"disabled": [{"name": n} for n in OTHER_VOLUME_PLUGINS]}},
        }
    ],
}


def test_through_the_framework() -> None:
    cluster = _limited(2, 1)
    cluster.add_pod(_bound("a", "n0", "c0"))
    cluster.add_pod(_bound("b", "n1", "c1"))
    fw = build_profiles(config_from_dict(LIMITS_ONLY), seed=1)["default-scheduler"]
    result = fw.schedule_pod(pod_from_dict(_claims("new", "c2")), cluster)
    assert result.selected_node is None
    assert result.message() == "0/2 nodes are available: 2 node(s) exceed max volume count."
    assert fw.schedule_pod(pod_from_dict(_claims("shares", "c1")), cluster).selected_node == "n1"
    store_objects(cluster, [CONFLICTING_CLAIM])
    raw = _pod("abc", ephemeral_volume("xyz"), namespace="test", uid="12345")
    err = fw.schedule_pod(pod_from_dict(raw), cluster)
    assert err.status.code == Code.ERROR
    assert err.status.message == f'running "NodeVolumeLimits" filter plugin: {NOT_OWNER[1]}'


def test_a_node_over_its_limit_still_takes_a_pod_whose_volumes_it_has() -> None:
    """Upstream compares only the drivers of the new volumes no pod on the node has: a pod sharing
    every volume passes a node that is already over the limit (a CSINode whose count was lowered)."""
    cluster = _limited(1, 5)
    cluster.add_pod(_bound("a", "n0", "c0", "c1", "c2"))
    store_objects(cluster, [make_csi_node("n0", {EBS: 1})])
    assert _verdicts(cluster, pod_from_dict(_claims("shares", "c1"))) == [True]
    assert _verdicts(cluster, pod_from_dict(_claims("adds", "c1", "c3"))) == [False]
