"""The CSI external-provisioner stand-in: volumes for claims, a simulated driver behind it.

Following kubernetes-csi/external-provisioner and sig-storage-lib-external-provisioner, for every
provisioner name a StorageClass uses except ``kubernetes.io/no-provisioner`` (and other in-tree
``kubernetes.io/`` names): a claim is provisioned when the PV controller has annotated it
``volume.kubernetes.io/storage-provisioner: P`` with P its class's provisioner, it names no volume
yet, and, if its class is WaitForFirstConsumer, the scheduler has written
``volume.kubernetes.io/selected-node``. The new PersistentVolume ``pvc-<claim uid>`` is a CSI volume
of driver P pre-bound to the claim (``claimRef``), with the claim's request as capacity (bytes,
formatted as upstream's ``resource.NewQuantity(n, BinarySI)``), access modes and volume mode, the
class's name, reclaim policy and mount options, and ``pv.kubernetes.io/provisioned-by: P``; the PV
controller then binds the claim to it. A Released volume with the Delete policy that P
provisioned is deleted.

Topology, for a claim with a selected node: the node's values of the topology keys the node's
CSINode lists for driver P; else its ``topology.kubernetes.io/zone`` (and ``region``) labels; else
its ``kubernetes.io/hostname``. The segment becomes ``spec.nodeAffinity.required``. An Immediate
claim of a class with ``allowedTopologies`` gets the first allowed segment, otherwise no affinity.

Provisioning fails (Warning ``ProvisioningFailed``, and for a claim with a selected node the
annotation is removed, upstream's signal to the scheduler to choose again) when the selected node
does not exist, when its labels lack a topology key its CSINode names, when the node is outside
the class's ``allowedTopologies``, or, for a CSIDriver with ``storageCapacity: true``, when no
CSIStorageCapacity of the class whose ``nodeTopology`` selects the node has room for the request
(``maximumVolumeSize`` if set, else ``capacity``): the simulated driver's ResourceExhausted.

Differences from upstream, on purpose: topology errors reschedule too (upstream's provisioner keeps
retrying the same node for them, and only a missing node or ResourceExhausted reschedules); the
hostname/zone fallbacks stand in for a driver that reports no topology; capacity is checked, never
consumed (the CSIStorageCapacity objects are the test's to change); no finalizer is put on the PV,
no secrets, data sources, clones or snapshots.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ksched.errors import NotFound, QuantityError
from ksched.model.quantity import parse_bytes
from ksched.sim._selectors import match_label_selector
from ksched.sim._storage_names import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NO_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    annotations,
    storage_class_of,
)
from ksched.sim.storage_controllers._api import AlreadyExists, Api, EventRecorder, Obj
from ksched.sim.storage_controllers._informer import Informer, RetryLater, WorkQueue, run_worker
from ksched.sim.storage_controllers._matching import Unreadable, describe, request_bytes, spec_of, status_of

log = logging.getLogger(__name__)

COMPONENT = "ksched-sim-csi-provisioner"
ZONE, REGION, HOSTNAME = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "kubernetes.io/hostname",
)
Key = tuple[str, str, str]
"""("claim", namespace, name) or ("volume", "", name)."""
_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def binary_quantity(n: int) -> str:
    """``resource.NewQuantity(n, BinarySI).String()``: ``1Gi``, ``1536Mi``, ``1000000000``."""
    if -1024 < n < 1024:
        return str(n)
    power = 0
    while n % 1024 == 0 and power < len(_BINARY) - 1:
        n //= 1024
        power += 1
    return f"{n}{_BINARY[power]}"


def go_map(m: dict[str, str]) -> str:
    """A map as Go's ``%v`` prints it (keys sorted): ``map[k1:v1 k2:v2]``."""
    return "map[" + " ".join(f"{k}:{m[k]}" for k in sorted(m)) + "]"


def served(provisioner: str) -> bool:
    """Whether the stand-in acts for this provisioner name."""
    return (
        bool(provisioner) and provisioner != NO_PROVISIONER and not provisioner.startswith("kubernetes.io/")
    )


class ProvisionFailed(Exception):
    """A claim cannot be provisioned now; ``reschedule`` asks the scheduler to pick another node."""

    def __init__(self, message: str, *, reschedule: bool) -> None:
        super().__init__(message)
        self.reschedule = reschedule


def _flatten(allowed: Any) -> list[dict[str, str]]:
    """``allowedTopologies`` as the list of segments it allows (each term's value combinations)."""
    out: list[dict[str, str]] = []
    for term in allowed if isinstance(allowed, list) else ():
        combos: list[dict[str, str]] = [{}]
        exprs = term.get("matchLabelExpressions") if isinstance(term, dict) else None
        for expr in exprs if isinstance(exprs, list) else ():
            values = expr.get("values") if isinstance(expr, dict) else None
            combos = [{**c, str(expr["key"]): str(v)} for c in combos for v in values or ()]
        out.extend(c for c in combos if c)
    return out


def _allowed(allowed: Any, labels: dict[str, str]) -> bool:
    """The node's labels satisfy one term of the class's ``allowedTopologies`` (the scheduler's rule)."""
    for term in allowed if isinstance(allowed, list) else ():
        exprs = term.get("matchLabelExpressions") if isinstance(term, dict) else None
        if all(
            isinstance(e, dict) and labels.get(str(e.get("key"))) in (e.get("values") or ())
            for e in (exprs if isinstance(exprs, list) else ())
        ):
            return True
    return False


def node_affinity(segment: dict[str, str]) -> Obj:
    exprs = [{"key": k, "operator": "In", "values": [segment[k]]} for k in sorted(segment)]
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}


class Provisioner:
    """Provisions and deletes volumes over HTTP; see the module docstring."""

    def __init__(
        self,
        api: Api,
        *,
        volumes: Informer,
        claims: Informer,
        classes: Informer,
        queue: WorkQueue[Key] | None = None,
    ) -> None:
        self.api = api
        self.volumes, self.claims, self.classes = volumes, claims, classes
        self.queue: WorkQueue[Key] = queue or WorkQueue()
        self.identity = f"{int(time.time() * 1000)}-ksched-sim"
        self._recorders: dict[str, EventRecorder] = {}
        claims.add_handler(self._on_claim)
        volumes.add_handler(self._on_volume)
        classes.add_handler(lambda *_: self.resync())

    def _on_claim(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        if new is not None:
            self.queue.add(("claim", new["metadata"].get("namespace", ""), new["metadata"]["name"]))

    def _on_volume(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        if new is not None:
            self.queue.add(("volume", "", new["metadata"]["name"]))

    def resync(self) -> None:
        for ns, name in list(self.claims.items):
            self.queue.add(("claim", ns, name))
        for _, name in list(self.volumes.items):
            self.queue.add(("volume", "", name))

    async def run(self) -> None:
        informers = {"persistentvolumes": self.volumes, "persistentvolumeclaims": self.claims}
        await run_worker(COMPONENT, self.queue, self.sync, self.api, informers)

    def _events(self, provisioner: str) -> EventRecorder:
        rec = self._recorders.get(provisioner)
        if rec is None:
            rec = self._recorders[provisioner] = EventRecorder(self.api, f"{provisioner}_{COMPONENT}")
        return rec

    async def sync(self, key: Key) -> None:
        kind, namespace, name = key
        if kind == "volume":
            volume = self.volumes.get("", name)
            if volume is not None:
                await self._maybe_delete(volume)
            return
        claim = self.claims.get(namespace, name)
        if claim is None:
            return
        cls = self._wanted(claim)
        if cls is not None:
            try:
                await self._provision(claim, cls)
            except Unreadable as exc:
                log.warning("%s: not provisioning: %s", describe(claim), exc)

    def _wanted(self, claim: Obj) -> Obj | None:
        """The claim's class when the claim is this provisioner's to provision now, else ``None``."""
        ann = annotations(claim)
        provisioner = ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)
        if not isinstance(provisioner, str) or not served(provisioner):
            return None
        if spec_of(claim).get("volumeName") or claim["metadata"].get("deletionTimestamp"):
            return None
        cls = self.classes.get("", storage_class_of(claim))
        if cls is None or cls.get("provisioner") != provisioner:
            return None
        if cls.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER and not ann.get(ANN_SELECTED_NODE):
            return None
        if self.volumes.get("", f"pvc-{claim['metadata'].get('uid', '')}") is not None:
            return None  # provisioned already
        return cls

    async def _provision(self, claim: Obj, cls: Obj) -> None:
        provisioner = str(cls["provisioner"])
        events = self._events(provisioner)
        meta = claim["metadata"]
        node_name = str(annotations(claim).get(ANN_SELECTED_NODE) or "")
        node: Obj | None = None
        if node_name:
            try:
                node = await self.api.get("nodes", node_name)
            except NotFound as exc:
                await self._failed(claim, events, exc.message, reschedule=True)
                return
        msg = (
            f'External provisioner is provisioning volume for claim "{meta.get("namespace")}/{meta["name"]}"'
        )
        await events.event("persistentvolumeclaims", claim, "Normal", "Provisioning", msg)
        try:
            volume = await self._volume(claim, cls, node)
        except ProvisionFailed as exc:
            msg = f'failed to provision volume with StorageClass "{cls["metadata"]["name"]}": {exc}'
            await self._failed(claim, events, msg, reschedule=exc.reschedule and node is not None)
            return
        try:
            created = await self.api.create("persistentvolumes", volume)
        except AlreadyExists:
            log.info("%s: volume %s exists already", describe(claim), volume["metadata"]["name"])
            return
        self.volumes.store(created)
        msg = f"Successfully provisioned volume {created['metadata']['name']}"
        await events.event("persistentvolumeclaims", claim, "Normal", "ProvisioningSucceeded", msg)

    async def _failed(self, claim: Obj, events: EventRecorder, msg: str, *, reschedule: bool) -> None:
        await events.event("persistentvolumeclaims", claim, "Warning", "ProvisioningFailed", msg)
        if not reschedule:
            raise ProvisioningRetry(msg)
        if ANN_SELECTED_NODE in annotations(claim):
            ann = {k: v for k, v in annotations(claim).items() if k != ANN_SELECTED_NODE}
            new = {**claim, "metadata": {**claim["metadata"], "annotations": ann}}
            self.claims.store(await self.api.update("persistentvolumeclaims", new))

    async def _volume(self, claim: Obj, cls: Obj, node: Obj | None) -> Obj:
        provisioner = str(cls["provisioner"])
        spec = spec_of(claim)
        meta = claim["metadata"]
        size = request_bytes(claim)
        pv_spec: Obj = {
            "accessModes": spec.get("accessModes"),
            "capacity": {"storage": binary_quantity(size)},
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "csi": {
                "driver": provisioner,
                "volumeHandle": f"vol-{meta.get('uid', '')}",
                "volumeAttributes": {
                    "storage.kubernetes.io/csiProvisionerIdentity": f"{self.identity}-{provisioner}"
                },
            },
            "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
            "storageClassName": cls["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
        }
        if cls.get("mountOptions"):
            pv_spec["mountOptions"] = cls["mountOptions"]
        segment = await self._segment(cls, node, size) if node is not None else None
        if segment is None and node is None:
            allowed = _flatten(cls.get("allowedTopologies"))
            segment = allowed[0] if allowed else None
        if segment:
            pv_spec["nodeAffinity"] = node_affinity(segment)
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"pvc-{meta.get('uid', '')}",
                "annotations": {ANN_PROVISIONED_BY: provisioner},
            },
            "spec": pv_spec,
        }

    async def _segment(self, cls: Obj, node: Obj, size: int) -> dict[str, str]:
        """The selected node's topology segment, after the allowed-topology and capacity checks."""
        provisioner, node_name = str(cls["provisioner"]), node["metadata"]["name"]
        labels = {str(k): str(v) for k, v in ((node["metadata"].get("labels") or {}).items())}
        csinode = await self.api.get_or_none("csinodes", node_name)
        drivers = spec_of(csinode).get("drivers") if csinode is not None else None
        keys: list[str] = []
        for d in drivers if isinstance(drivers, list) else ():
            if (
                isinstance(d, dict)
                and d.get("name") == provisioner
                and isinstance(d.get("topologyKeys"), list)
            ):
                keys = [str(k) for k in d["topologyKeys"]]
        if keys:
            if any(k not in labels for k in keys):
                raise ProvisionFailed(
                    "error generating accessibility requirements: topology labels from selected node "
                    f"{go_map(labels)} does not match topology keys from CSINode {keys}",
                    reschedule=True,
                )
            segment = {k: labels[k] for k in keys}
        elif ZONE in labels:
            segment = {k: labels[k] for k in (ZONE, REGION) if k in labels}
        else:
            segment = {HOSTNAME: labels.get(HOSTNAME, node_name)}
        allowed = cls.get("allowedTopologies")
        if allowed and not _allowed(allowed, labels):
            flat = "[" + " ".join(go_map(t) for t in _flatten(allowed)) + "]"
            raise ProvisionFailed(
                f"error generating accessibility requirements: selected node '\"{node_name}\"' topology "
                f"'{go_map(segment)}' is not in allowed topologies: {flat}",
                reschedule=True,
            )
        await self._check_capacity(cls, node_name, labels, size)
        return segment

    async def _check_capacity(self, cls: Obj, node_name: str, labels: dict[str, str], size: int) -> None:
        driver = await self.api.get_or_none("csidrivers", str(cls["provisioner"]))
        if driver is None or not spec_of(driver).get("storageCapacity"):
            return
        class_name = cls["metadata"]["name"]
        best = -1
        for cap in (await self.api.list("csistoragecapacities")).get("items") or ():
            if cap.get("storageClassName") != class_name or not isinstance(cap.get("nodeTopology"), dict):
                continue
            if not match_label_selector(cap["nodeTopology"], labels):
                continue
            limit = cap.get("maximumVolumeSize", cap.get("capacity"))
            try:
                best = max(best, parse_bytes(limit)) if limit is not None else best
            except QuantityError as exc:
                log.warning("ignoring CSIStorageCapacity %s: %s", cap["metadata"].get("name"), exc)
        if best < size:
            have = f"at most {binary_quantity(best)}" if best >= 0 else "no CSIStorageCapacity"
            raise ProvisionFailed(
                f"rpc error: code = ResourceExhausted desc = requested {binary_quantity(size)} for node "
                f'"{node_name}", {have} published for StorageClass "{class_name}" in its topology',
                reschedule=True,
            )

    async def _maybe_delete(self, volume: Obj) -> None:
        provisioner = str(annotations(volume).get(ANN_PROVISIONED_BY) or "")
        if not served(provisioner) or status_of(volume).get("phase") != "Released":
            return
        if spec_of(volume).get("persistentVolumeReclaimPolicy") != "Delete":
            return
        meta = volume["metadata"]
        await self.api.delete("persistentvolumes", meta["name"], uid=str(meta.get("uid", "")))
        log.info("deleted volume %s (Released, reclaim policy Delete)", meta["name"])


class ProvisioningRetry(RetryLater):
    """Provisioning failed for a reason that may pass (no node to reschedule): retry with backoff."""
