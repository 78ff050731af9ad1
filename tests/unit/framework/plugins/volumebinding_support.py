"""What the VolumeBinding tests share: upstream binder_test.go's fixtures (``makeTestPVC``,
``makeTestPV`` and the objects built from them) as raw dicts, a cache holding them, and
:class:`FakeApi`, an in-memory stand-in for the plugin's API client.

:class:`FakeApi` keeps the API's copy of each PV and PVC, applies a PUT with optimistic concurrency
on ``resourceVersion`` (as upstream's test reactor does: a stale version is a 409, a success bumps
the version), and, like the reactor's watch feeding the informers, delivers every change to the
cache's volume store at once unless ``deliver=False``. ``hold=True`` leaves answers pending until
:meth:`FakeApi.answer` is called.
"""

from __future__ import annotations

import concurrent.futures
import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.errors import ApiError, Conflict, NotFound
from ksched.model.node import Node, node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import PersistentVolume, PersistentVolumeClaim, pv_from_dict, pvc_from_dict
from tests.builders import make_node, make_pod
from tests.storage_builders import (
    add_storage,
    claim_volume,
    ephemeral_volume,
    make_csi_driver,
    make_csi_node,
    make_pv,
    make_pvc,
    make_storage_class,
)

NAMESPACE = "testns"
PROVISIONER = "test-provisioner"
NODE_KEY = "nodeKey"
WAIT = "waitClass"
IMMEDIATE = "immediateClass"
WAIT_PROV = "waitClassWithProvisioner"
TOPO_MISMATCH = "topoMismatchClass"
POD_UID = "test-pod-uid"

CLASSES = [
    make_storage_class(
        WAIT_PROV, provisioner=PROVISIONER, allowed_topologies={NODE_KEY: ["node1", "reference-value"]}
    ),
    make_storage_class(IMMEDIATE, binding_mode="Immediate", provisioner=""),
    make_storage_class(WAIT),
    make_storage_class(
        TOPO_MISMATCH, provisioner=PROVISIONER, allowed_topologies={NODE_KEY: ["reference-value"]}
    ),
]
"""binder_test.go's ``newTestBinder`` storage classes."""

UNBOUND, PREBOUND, BOUND, SELECTED = range(4)


def upstream_pvc(
    name: str, size: str, node: str, state: int, pv: str, rv: str, cls: str | None
) -> dict[str, Any]:
    """``makeTestPVC``: namespace ``testns``, uid ``pvc-uid`` (every claim), Filesystem."""
    raw = make_pvc(
        name,
        namespace=NAMESPACE,
        storage_class=cls,
        request=size,
        uid="pvc-uid",
        volume_mode="Filesystem",
        resource_version=rv,
        selected_node=node if state == SELECTED else None,
        bound=state == BOUND,
        volume_name=pv if state in (BOUND, PREBOUND) else "",
    )
    return raw


def upstream_pv(
    name: str, node: str, capacity: str, rv: str, bound_to: Mapping[str, Any] | None, cls: str
) -> dict[str, Any]:
    """``makeTestPV``: ``nodeKey In [node]`` affinity, Available, pre-bound to ``bound_to``."""
    claim = None
    if bound_to is not None:
        meta = bound_to["metadata"]
        claim = (meta["namespace"], meta["name"], meta["uid"])
    raw = make_pv(
        name,
        storage_class=cls,
        capacity=capacity,
        resource_version=rv,
        volume_mode="Filesystem",
        affinity={NODE_KEY: [node]} if node else None,
        claim=claim,
        bound_by_controller=bound_to is not None,
    )
    if bound_to is not None:
        ref = raw["spec"]["claimRef"]
        ref.update({"apiVersion": "v1", "resourceVersion": bound_to["metadata"]["resourceVersion"]})
    return raw


# binder_test.go's objects
unboundPVC = upstream_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT)
unboundPVC2 = upstream_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT)
preboundPVC = upstream_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT)
preboundPVCNode1a = upstream_pvc("unbound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT)
boundPVC = upstream_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT)
boundPVCNode1a = upstream_pvc("unbound-pvc", "1G", "", BOUND, "pv-node1a", "1", WAIT)
immediateUnboundPVC = upstream_pvc("immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE)
immediateBoundPVC = upstream_pvc("immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1", IMMEDIATE)
provisionedPVC = upstream_pvc("provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_PROV)
provisionedPVC2 = upstream_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "1", WAIT_PROV)
provisionedPVCHigherVersion = upstream_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "2", WAIT_PROV)
provisionedPVCBound = upstream_pvc("provisioned-pvc", "1Gi", "", BOUND, "pv-bound", "1", WAIT_PROV)
noProvisionerPVC = upstream_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT)
topoMismatchPVC = upstream_pvc("topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH)
selectedNodePVC = upstream_pvc("provisioned-pvc", "1Gi", "node1", SELECTED, "", "1", WAIT_PROV)
boundMigrationPVC = upstream_pvc("pvc-migration-bound", "1G", "", BOUND, "pv-migration-bound", "1", WAIT)
provMigrationPVCBound = upstream_pvc(
    "pvc-migration-provisioned", "1Gi", "", BOUND, "pv-migration-bound", "1", WAIT_PROV
)

pvNode1a = upstream_pv("pv-node1a", "node1", "5G", "1", None, WAIT)
pvNode1b = upstream_pv("pv-node1b", "node1", "10G", "1", None, WAIT)
pvNode1c = upstream_pv("pv-node1b", "node1", "5G", "1", None, WAIT)
pvNode2 = upstream_pv("pv-node2", "node2", "1G", "1", None, WAIT)
pvBound = upstream_pv("pv-bound", "node1", "1G", "1", boundPVC, WAIT)
pvNode1aBound = upstream_pv("pv-node1a", "node1", "5G", "1", unboundPVC, WAIT)
pvNode1bBound = upstream_pv("pv-node1b", "node1", "10G", "1", unboundPVC2, WAIT)
pvNode1bBoundHigherVersion = upstream_pv("pv-node1b", "node1", "10G", "2", unboundPVC2, WAIT)
pvBoundImmediate = upstream_pv("pv-bound-immediate", "node1", "1G", "1", immediateBoundPVC, IMMEDIATE)
pvBoundImmediateNode2 = upstream_pv("pv-bound-immediate", "node2", "1G", "1", immediateBoundPVC, IMMEDIATE)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def migration_pv(bound_to: Mapping[str, Any], migrated: bool) -> dict[str, Any]:
    """``makeTestPVForCSIMigration``: a GCE PD (migrated plugin) or RBD (not migrated) PV with zone
    labels and no node affinity of its own."""
    raw = upstream_pv("pv-migration-bound", "node1", "1G", "1", bound_to, WAIT)
    del raw["spec"]["nodeAffinity"]
    del raw["spec"]["csi"]
    raw["metadata"]["labels"] = dict(ZONE1_LABELS)
    if migrated:
        raw["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4"}
    else:
        raw["spec"]["rbd"] = {"image": "test-disk", "monitors": ["m"]}
    return raw


migrationPVBound = migration_pv(boundMigrationPVC, True)
migrationPVBoundToUnbound = migration_pv(unboundPVC, True)
nonmigrationPVBoundToUnbound = migration_pv(unboundPVC, False)


def generic_pvc(owned: bool) -> dict[str, Any]:
    """``makeGenericEphemeralPVC("test-volume", owned)``: the ephemeral claim of ``test-pod``."""
    raw = upstream_pvc("test-pod-test-volume", "1G", "", BOUND, "pv-bound", "1", IMMEDIATE)
    if owned:
        raw["metadata"]["ownerReferences"] = [
            {"kind": "Pod", "name": "test-pod", "uid": POD_UID, "controller": True}
        ]
    return raw


conflictingGenericPVC = generic_pvc(False)
correctGenericPVC = generic_pvc(True)
pvBoundGeneric = upstream_pv("pv-bound", "node1", "1G", "1", correctGenericPVC, WAIT)


def node1_raw(**labels: str) -> dict[str, Any]:
    return make_node("node1", cpu=4, memory="8Gi", pods=10, labels=labels)


NODE1 = {NODE_KEY: "node1"}
NODE2 = {NODE_KEY: "node2"}
ZONE1 = {"topology.gke.io/zone": "us-east-1"}
ZONE2 = {"topology.gke.io/zone": "us-east-2"}


def upstream_pod(
    claims: Iterable[Mapping[str, Any]] = (), *, ephemeral: Iterable[str] = (), node: str = "node1"
) -> Pod:
    """``makePod("test-pod").withNamespace("testns").withNodeName("node1").withPVCSVolume(...)``."""
    volumes = [claim_volume(c["metadata"]["name"]) for c in claims]
    volumes += [ephemeral_volume(e) for e in ephemeral]
    return pod_from_dict(
        make_pod("test-pod", namespace=NAMESPACE, uid=POD_UID, node_name=node, volumes=volumes)
    )


def cache_with(
    *,
    nodes: Iterable[Mapping[str, Any]] = (),
    pvs: Iterable[Mapping[str, Any]] = (),
    pvcs: Iterable[Mapping[str, Any]] = (),
    csi_nodes: Iterable[Mapping[str, Any]] = (),
    csi_drivers: Iterable[Mapping[str, Any]] = (),
    capacities: Iterable[Mapping[str, Any]] = (),
    classes: Iterable[Mapping[str, Any]] = CLASSES,
) -> ClusterCache:
    cache = ClusterCache()
    for n in nodes:
        cache.add_node(node_from_dict(n))
    return add_storage(
        cache,
        pvs=pvs,
        pvcs=pvcs,
        classes=classes,
        csi_nodes=csi_nodes,
        csi_drivers=csi_drivers,
        capacities=capacities,
    )


def capacity_driver(opt_in: bool) -> dict[str, Any]:
    return make_csi_driver(PROVISIONER, storage_capacity=opt_in)


def migrated_csi_node(plugin: str = "kubernetes.io/gce-pd") -> dict[str, Any]:
    return make_csi_node("node1", migrated=plugin)


def node_record(labels: Mapping[str, str], name: str = "node1") -> Node:
    return node_from_dict(make_node(name, labels=labels))


def pv(raw: Mapping[str, Any]) -> PersistentVolume:
    return pv_from_dict(raw)


def pvc(raw: Mapping[str, Any]) -> PersistentVolumeClaim:
    return pvc_from_dict(raw)


def bump(raw: Mapping[str, Any], rv: int | None = None) -> dict[str, Any]:
    """A copy of ``raw`` one resourceVersion on (or at ``rv``): what an update makes of it."""
    out = copy.deepcopy(dict(raw))
    meta = out["metadata"]
    meta["resourceVersion"] = str(rv if rv is not None else int(meta.get("resourceVersion") or 0) + 1)
    return out


# --------------------------------------------------------------------------- the API fake
def _path_key(path: str) -> tuple[str, str] | None:
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "persistentvolumes"] and len(parts) == 4:
        return vol.PERSISTENT_VOLUMES, parts[3]
    if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "persistentvolumeclaims":
        return vol.PERSISTENT_VOLUME_CLAIMS, f"{parts[3]}/{parts[5]}"
    return None


class FakeApi:
    """The plugin's API client (``request(method, path, body, timeout_s=)`` -> Future), in memory."""

    def __init__(
        self, cache: ClusterCache | None = None, *, deliver: bool = True, hold: bool = False
    ) -> None:
        self.cache = cache
        self.deliver = deliver
        self.hold = hold
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail: dict[str, BaseException] = {}
        """path -> the error its next request fails with."""
        self._held: list[tuple[concurrent.futures.Future[Any], Any]] = []

    def put_object(self, kind: str, raw: Mapping[str, Any]) -> None:
        """The API's copy of an object (no informer delivery)."""
        meta = raw["metadata"]
        key = meta["name"] if kind == vol.PERSISTENT_VOLUMES else f"{meta['namespace']}/{meta['name']}"
        self.objects[(kind, key)] = copy.deepcopy(dict(raw))

    def update(self, kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Someone else's update (the PV controller's): stored one version on and delivered."""
        meta = raw["metadata"]
        key = meta["name"] if kind == vol.PERSISTENT_VOLUMES else f"{meta['namespace']}/{meta['name']}"
        old = self.objects.get((kind, key))
        rv = int((old or raw)["metadata"].get("resourceVersion") or 0) + 1
        new = bump(raw, rv)
        self.objects[(kind, key)] = new
        self._deliver(kind, new)
        return new

    def delete(self, kind: str, key: str) -> None:
        self.objects.pop((kind, key), None)
        if self.cache is not None and self.deliver:
            self.cache.volumes.delete(kind, key)

    def _deliver(self, kind: str, raw: Mapping[str, Any]) -> None:
        if self.cache is not None and self.deliver:
            decode = pv_from_dict if kind == vol.PERSISTENT_VOLUMES else pvc_from_dict
            self.cache.volumes.upsert(kind, decode(raw))

    def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float
    ) -> concurrent.futures.Future[Any]:
        self.requests.append((method, path))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        outcome = self._apply(method, path, body)
        if self.hold:
            self._held.append((future, outcome))
        else:
            _settle(future, outcome)
        return future

    def answer(self) -> int:
        """Settle every held request; returns how many."""
        held, self._held = self._held, []
        for future, outcome in held:
            _settle(future, outcome)
        return len(held)

    def _apply(self, method: str, path: str, body: Any) -> Any:
        err = self.fail.pop(path, None)
        if err is not None:
            return err
        key = _path_key(path)
        if method != "PUT" or key is None:
            return ApiError(405, "MethodNotAllowed", f"{method} {path} is not served by the fake")
        kind, name = key
        stored = self.objects.get(key)
        resource = "persistentvolumes" if kind == vol.PERSISTENT_VOLUMES else "persistentvolumeclaims"
        short = name.split("/")[-1]
        if stored is None:
            return NotFound(404, "NotFound", f'{resource} "{short}" not found')
        want = str(body["metadata"].get("resourceVersion") or "")
        have = str(stored["metadata"].get("resourceVersion") or "")
        if want != have:
            return Conflict(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource} "{short}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )
        new = bump(body, int(have or 0) + 1)
        self.objects[key] = new
        self._deliver(kind, new)
        return copy.deepcopy(new)


def _settle(future: concurrent.futures.Future[Any], outcome: Any) -> None:
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def api_with(
    cache: ClusterCache,
    pvs: Iterable[Mapping[str, Any]] = (),
    pvcs: Iterable[Mapping[str, Any]] = (),
    **kw: Any,
) -> FakeApi:
    api = FakeApi(cache, **kw)
    for raw in pvs:
        api.put_object(vol.PERSISTENT_VOLUMES, raw)
    for raw in pvcs:
        api.put_object(vol.PERSISTENT_VOLUME_CLAIMS, raw)
    return api
