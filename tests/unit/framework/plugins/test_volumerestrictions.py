"""VolumeRestrictions, ported from upstream ``volumerestrictions/volume_restrictions_test.go``:
TestGCEDiskConflicts (5 cases), TestAWSDiskConflicts (4), TestRBDDiskConflicts (4),
TestISCSIDiskConflicts (4), TestAccessModeConflicts (5); the queueing hints (tables of our own,
from the hint functions' code); and ReadWriteOncePod with preemption: a higher-priority second
user of the claim preempts its lower-priority holder, through the what-if overlay that stands for
upstream's AddPod / RemovePod.

As upstream's tests do, Filter runs only when PreFilter succeeded.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework.interface import Code, CycleState, QueueingHint
from ksched.framework.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
    hints,
)
from ksched.framework.profile import build_profiles
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import pvc_from_dict
from ksched.scheduler.events_registry import DEFAULT_PLUGIN_EVENTS, events_of_plugin
from tests.builders import (
    claim_volume,
    cluster_of,
    inline_volume,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    store_objects,
)

DISK = (Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
RWOP = (Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
SKIPPED = "skip"
NODE = "node-1"


def _pod(name: str, *volumes: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return make_pod(name, volumes=list(volumes), **kwargs)


def run(
    incoming: dict[str, Any],
    on_node: list[dict[str, Any]],
    claims: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Any:
    """ "skip", the PreFilter rejection (code, message), or Filter's (code, message) / None."""
    cluster = cluster_of([make_node(NODE, pods=10)])
    store_objects(cluster, claims)
    for raw in on_node:
        cluster.add_pod(pod_from_dict({**raw, "spec": {**raw["spec"], "nodeName": NODE}}))
    plugin = VolumeRestrictions()
    pod = pod_from_dict(incoming)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, cluster)
    if status.code == Code.SKIP:
        return SKIPPED
    if not status.ok:
        return status.code, status.message
    reasons, code = plugin.filter(state, pod, cluster).reasons_at(0)
    return (code, ", ".join(reasons)) if reasons else None


def _disk_cases(kind: str, same: dict[str, Any], other: dict[str, Any]) -> list[Any]:
    return [
        pytest.param(_pod("p"), [], SKIPPED, id=f"{kind}: nothing"),
        pytest.param(_pod("p"), [_pod("e", same)], SKIPPED, id=f"{kind}: one state"),
        pytest.param(_pod("p", same), [_pod("e", same)], DISK, id=f"{kind}: same state"),
        pytest.param(_pod("p", other), [_pod("e", same)], None, id=f"{kind}: different state"),
    ]


GCE = inline_volume("gcePersistentDisk", pdName="foo")
AWS = inline_volume("awsElasticBlockStore", volumeID="foo")
RBD = inline_volume("rbd", monitors=["a", "b"], pool="foo", image="bar", fsType="ext4")
ISCSI = inline_volume(
    "iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2016-12.server:storage.target01", lun=0
)
DISK_CASES = [
    *_disk_cases("GCE", GCE, inline_volume("gcePersistentDisk", pdName="bar")),
    pytest.param(
        _pod("p", {"name": "volume with no restriction", "emptyDir": {}}),
        [],
        SKIPPED,
        id="GCE: pod with a volume that doesn't have restrictions",
    ),
    *_disk_cases("AWS", AWS, inline_volume("awsElasticBlockStore", volumeID="bar")),
    *_disk_cases(
        "RBD", RBD, inline_volume("rbd", monitors=["c", "d"], pool="foo", image="bar", fsType="ext4")
    ),
    *_disk_cases(
        "ISCSI",
        ISCSI,
        inline_volume(
            "iscsi", targetPortal="127.0.0.1:3260", iqn="iqn.2017-12.server:storage.target01", lun=0
        ),
    ),
]


@pytest.mark.parametrize(("incoming", "on_node", "want"), DISK_CASES)
def test_disk_conflicts(incoming: dict[str, Any], on_node: list[dict[str, Any]], want: Any) -> None:
    assert run(incoming, on_node) == want


READ_ONLY = [
    pytest.param(
        inline_volume("gcePersistentDisk", pdName="foo", readOnly=True),
        inline_volume("gcePersistentDisk", pdName="foo", readOnly=True),
        None,
        id="GCE read-only twice",
    ),
    pytest.param(
        inline_volume("gcePersistentDisk", pdName="foo", readOnly=True), GCE, DISK, id="GCE read-only on rw"
    ),
    pytest.param(
        inline_volume("awsElasticBlockStore", volumeID="foo", readOnly=True),
        inline_volume("awsElasticBlockStore", volumeID="foo", readOnly=True),
        DISK,
        id="AWS conflicts even read-only",
    ),
    pytest.param(
        inline_volume("rbd", monitors=["b", "z"], pool="foo", image="bar", readOnly=True),
        inline_volume("rbd", monitors=["a", "b"], pool="foo", image="bar", readOnly=True),
        None,
        id="RBD read-only twice",
    ),
    pytest.param(
        inline_volume("rbd", monitors=["b", "z"], pool="foo", image="bar"),
        RBD,
        DISK,
        id="RBD one shared monitor",
    ),
    pytest.param(
        inline_volume("rbd", monitors=["a"], pool="other", image="bar"), RBD, None, id="RBD another pool"
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "want"), READ_ONLY)
def test_read_only_rules(incoming: dict[str, Any], existing: dict[str, Any], want: Any) -> None:
    assert run(_pod("p", incoming), [_pod("e", existing)]) == want


RWOP_1 = make_pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = make_pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = make_pvc("claim-with-rwx", access_modes=["ReadWriteMany"])
WITH_ONE = _pod("pod-with-one-pvc", claim_volume("claim-with-rwop-1"))
WITH_TWO = _pod("pod-with-two-pvcs", claim_volume("claim-with-rwop-1"), claim_volume("claim-with-rwop-2"))
ONE_CONFLICT = _pod("pod-with-one-conflict", claim_volume("claim-with-rwop-1"))
TWO_CONFLICTS = _pod(
    "pod-with-two-conflicts", claim_volume("claim-with-rwop-1"), claim_volume("claim-with-rwop-2")
)
WITH_RWX = _pod("pod-with-rwx", claim_volume("claim-with-rwx"))
ACCESS_MODE = [
    pytest.param(_pod("p"), [], [], SKIPPED, id="nothing"),
    pytest.param(
        WITH_ONE,
        [],
        [],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'),
        id="failed to get PVC",
    ),
    pytest.param(WITH_ONE, [WITH_RWX], [RWOP_1, RWX], SKIPPED, id="no access mode conflict"),
    pytest.param(
        ONE_CONFLICT, [WITH_ONE, WITH_RWX], [RWOP_1, RWX], RWOP, id="access mode conflict, unschedulable"
    ),
    pytest.param(
        TWO_CONFLICTS, [WITH_TWO, WITH_RWX], [RWOP_1, RWOP_2, RWX], RWOP, id="two conflicts, unschedulable"
    ),
]


@pytest.mark.parametrize(("incoming", "on_node", "claims", "want"), ACCESS_MODE)
def test_access_mode_conflicts(
    incoming: dict[str, Any], on_node: list[dict[str, Any]], claims: list[dict[str, Any]], want: Any
) -> None:
    assert run(incoming, on_node, claims) == want


def test_malformed_claim_is_reported() -> None:
    cluster = cluster_of([make_node(NODE)])
    cluster.volumes.problems[("persistentvolumeclaims", "default/bad")] = (
        "PersistentVolumeClaim default/bad: spec: x"
    )
    _, status = VolumeRestrictions().pre_filter(
        CycleState(), pod_from_dict(_pod("p", claim_volume("bad"))), cluster
    )
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "PersistentVolumeClaim default/bad: spec: x",
    )


# ------------------------------------------------------------------------- ReadWriteOncePod and preemption
NO_BINDING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"disabled": [{"name": "VolumeBinding"}]}},
        }
    ],
}


def _rwop_cluster(*, stranger_too: bool = True) -> tuple[ClusterCache, Pod, Pod]:
    """n0 runs the claim's holder; n1 (``stranger_too``) a pod of another namespace whose claim
    has the same name; n2 nothing."""
    cluster = cluster_of([make_node(f"n{i}", cpu=4, memory="4Gi", pods=10) for i in range(3)])
    store_objects(
        cluster,
        [
            make_pv("pv-data"),
            make_pv("pv-other"),
            make_pvc("data", access_modes=["ReadWriteOncePod"], volume_name="pv-data"),
            make_pvc("data", namespace="other", access_modes=["ReadWriteOnce"], volume_name="pv-other"),
        ],
    )
    holder = pod_from_dict(
        _pod("holder", claim_volume("data"), node_name="n0", priority=0, requests={"cpu": "1"})
    )
    stranger = pod_from_dict(
        _pod(
            "stranger",
            claim_volume("data"),
            namespace="other",
            node_name="n1",
            priority=0,
            requests={"cpu": "1"},
        )
    )
    cluster.add_pod(holder)
    if stranger_too:
        cluster.add_pod(stranger)
    return cluster, holder, stranger


def test_higher_priority_second_user_preempts_the_holder() -> None:
    cluster, holder, _ = _rwop_cluster(stranger_too=False)
    fw = build_profiles(config_from_dict(NO_BINDING), seed=1)["default-scheduler"]
    preemptor = pod_from_dict(_pod("second", claim_volume("data"), priority=100, requests={"cpu": "1"}))
    result = fw.schedule_pod(preemptor, cluster)
    assert result.selected_node is None
    assert result.message() == (
        "0/3 nodes are available: 3 node has pod using PersistentVolumeClaim with the same name and "
        "ReadWriteOncePod access mode."
    )
    detail = VolumeRestrictions().explain_row(preemptor, cluster, 1)
    assert detail == "ReadWriteOncePod claim(s) data already in use by a pod"
    before = cluster.volume_index.state()
    pf = fw.run_post_filter(preemptor, cluster, result)
    assert pf is not None and pf.nominated_node == "n0"
    assert [v.uid for v in pf.victims] == [holder.uid]
    assert cluster.volume_index.state() == before and not cluster.volume_index.overlay_claim_names
    low = pod_from_dict(_pod("third", claim_volume("data"), priority=-10, requests={"cpu": "1"}))
    low_result = fw.schedule_pod(low, cluster)
    assert fw.run_post_filter(low, cluster, low_result).nominated_node == ""  # type: ignore[union-attr]


def test_removing_a_pod_that_names_the_claim_in_another_namespace_counts_as_upstream() -> None:
    """Upstream's RemovePod matches claims by name alone, so taking away a pod of another namespace
    whose claim has the same name lowers the count too: its dry run on that node passes, and
    preemption may choose that node (upstream's choice between the two equal candidates depends
    on the order its parallel dry runs finish in)."""
    cluster, holder, stranger = _rwop_cluster()
    plugin = VolumeRestrictions()
    pod = pod_from_dict(_pod("second", claim_volume("data")))
    for removed, passes in ((holder.uid, True), (stranger.uid, True), (None, False)):
        with cluster.what_if(remove=[removed] if removed else []):
            state = CycleState()
            _, status = plugin.pre_filter(state, pod, cluster)
            assert status.ok
            passed = not plugin.filter(state, pod, cluster).reasons_at(2)[0]
        assert passed is passes


def test_relevance_names_the_claim_users_and_the_conflicting_disks() -> None:
    cluster, holder, stranger = _rwop_cluster()
    relevant = VolumeRestrictions().relevance(pod_from_dict(_pod("p", claim_volume("data"), GCE)), cluster)
    assert relevant is not None
    assert relevant(holder) and relevant(stranger)
    assert relevant(pod_from_dict(_pod("d", GCE)))
    assert not relevant(pod_from_dict(_pod("d", inline_volume("gcePersistentDisk", pdName="bar"))))
    assert VolumeRestrictions().relevance(pod_from_dict(_pod("plain")), cluster) is None


# ----------------------------------------------------------------------------------------- hints
POD = _pod("p", GCE, claim_volume("c1"))
DELETED = [
    pytest.param(_pod("d", GCE), QueueingHint.QUEUE, id="deleted pod held a conflicting disk"),
    pytest.param(_pod("d", GCE, namespace="other"), QueueingHint.QUEUE_SKIP, id="another namespace"),
    pytest.param(_pod("d", claim_volume("c1")), QueueingHint.QUEUE, id="deleted pod named the same claim"),
    pytest.param(_pod("d", claim_volume("c2")), QueueingHint.QUEUE_SKIP, id="an irrelevant pod"),
    pytest.param(_pod("d", AWS), QueueingHint.QUEUE_SKIP, id="a disk of another kind"),
]


@pytest.mark.parametrize(("deleted", "want"), DELETED)
def test_hint_after_pod_deleted(deleted: dict[str, Any], want: QueueingHint) -> None:
    assert hints.after_pod_deleted(pod_from_dict(POD), pod_from_dict(deleted), None) == want


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        pytest.param(make_pvc("c1"), QueueingHint.QUEUE, id="the pod's claim was created"),
        pytest.param(make_pvc("c1", namespace="other"), QueueingHint.QUEUE_SKIP, id="another namespace"),
        pytest.param(make_pvc("c2"), QueueingHint.QUEUE_SKIP, id="another claim"),
    ],
)
def test_hint_after_claim_added(claim: dict[str, Any], want: QueueingHint) -> None:
    assert hints.after_claim_added(pod_from_dict(POD), None, pvc_from_dict(claim)) == want


def test_hints_answer_queue_for_objects_of_the_wrong_type() -> None:
    assert hints.after_pod_deleted(pod_from_dict(POD), "x", None) == QueueingHint.QUEUE
    assert hints.after_claim_added(pod_from_dict(POD), None, "x") == QueueingHint.QUEUE


def test_registered_events_are_the_plugins() -> None:
    plugin = VolumeRestrictions()
    assert plugin.events_to_register() == list(plugin.queueing_hints())
    assert events_of_plugin(plugin) == DEFAULT_PLUGIN_EVENTS[plugin.name]
