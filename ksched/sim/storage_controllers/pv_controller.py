"""The PersistentVolume controller stand-in: binding as kube-controller-manager v1.35 does it.

Ported from ``pkg/controller/volume/persistentvolume/pv_controller.go`` for what a scheduler can
observe: ``syncClaim`` (unbound: find the best Available volume, or ask the external provisioner,
or wait for the first consumer; bound: keep the binding, or mark the claim Lost) and ``syncVolume``
(Available when unclaimed or pre-bound without a uid, Bound, Released when its claim is gone, then
the reclaim policy; a volume the controller bound to a claim that went elsewhere is unbound). A bind
writes, in upstream's order, the volume (``claimRef``, ``bound-by-controller``), its phase, the
claim (``volumeName``, ``bind-completed``, ``bound-by-controller`` when the controller chose the
volume), and the claim's status (phase, access modes, capacity). Events are upstream's reasons and
messages from the ``persistentvolume-controller`` component.

Differences from kube-controller-manager, on purpose:

* A claim waiting for a volume is synced again as soon as a volume or a class changes (upstream
  relies on its 15 s periodic resync, which runs here too): tests need not wait.
* Reclaiming: ``Retain`` keeps the volume Released; ``Delete`` of a volume provisioned by an
  external provisioner is left to it (:mod:`.provisioner` deletes it); every other ``Delete`` and
  ``Recycle`` fails the volume with upstream's event (no in-tree volume plugins exist here).
* Not done: in-tree provisioning plugins (``kubernetes.io/no-provisioner`` and any other
  ``kubernetes.io/`` name get upstream's "no volume plugin matched" event), CSI migration
  annotations, the pv-protection/pvc-protection finalizers, metrics, volume expansion.
"""

from __future__ import annotations

import logging
from typing import Any

from ksched.errors import NotFound
from ksched.sim._storage_names import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NO_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    annotations,
    default_class,
    storage_class_of,
)
from ksched.sim.storage_controllers._api import Api, EventRecorder, Obj
from ksched.sim.storage_controllers._informer import Informer, WorkQueue, run_worker
from ksched.sim.storage_controllers._matching import (
    Unreadable,
    capacity_bytes,
    claim_ref,
    describe,
    find_best_match,
    is_bound_to,
    mismatch,
    spec_of,
    status_of,
    volume_mode_mismatch,
)

log = logging.getLogger(__name__)

COMPONENT = "persistentvolume-controller"
Key = tuple[str, str, str]
"""("claim", namespace, name) or ("volume", "", name)."""


def _claim_key(obj: Obj) -> Key:
    return ("claim", obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _with_annotations(obj: Obj, **changes: str | None) -> Obj:
    """A copy of ``obj`` whose annotations are changed (``None`` removes one)."""
    ann = dict(annotations(obj))
    for key, value in changes.items():
        if value is None:
            ann.pop(key, None)
        else:
            ann[key] = value
    return {**obj, "metadata": {**obj["metadata"], "annotations": ann}}


class PVController:
    """Binds claims to volumes over HTTP; see the module docstring."""

    def __init__(
        self,
        api: Api,
        *,
        volumes: Informer,
        claims: Informer,
        classes: Informer,
        pods: Informer | None,
        queue: WorkQueue[Key] | None = None,
    ) -> None:
        self.api = api
        self.volumes, self.claims, self.classes, self.pods = volumes, claims, classes, pods
        self.queue: WorkQueue[Key] = queue or WorkQueue()
        self.events = EventRecorder(api, COMPONENT)
        volumes.add_handler(self._on_volume)
        claims.add_handler(self._on_claim)
        classes.add_handler(lambda *_: self._requeue_unbound_claims())

    # -- handlers: only queue keys --------------------------------------------------------------------
    def _on_claim(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        if new is not None:
            self.queue.add(_claim_key(new))
            return
        assert old is not None
        name = spec_of(old).get("volumeName")
        if isinstance(name, str) and name:
            self.queue.add(("volume", "", name))
        for volume in self.volumes.items.values():
            if is_bound_to(volume, old) and volume["metadata"]["name"] != name:
                self.queue.add(("volume", "", volume["metadata"]["name"]))

    def _on_volume(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old
        assert obj is not None
        if new is not None:
            self.queue.add(("volume", "", new["metadata"]["name"]))
        ref = claim_ref(obj)
        if ref is not None and isinstance(ref.get("name"), str):
            self.queue.add(("claim", str(ref.get("namespace", "")), ref["name"]))
        self._requeue_unbound_claims()

    def _requeue_unbound_claims(self) -> None:
        for claim in self.claims.items.values():
            if ANN_BIND_COMPLETED not in annotations(claim):
                self.queue.add(_claim_key(claim))

    def resync(self) -> None:
        """Queue every claim and volume, as upstream's periodic resync does."""
        for claim in self.claims.items.values():
            self.queue.add(_claim_key(claim))
        for name in [k[1] for k in self.volumes.items]:
            self.queue.add(("volume", "", name))

    async def run(self) -> None:
        informers = {"persistentvolumes": self.volumes, "persistentvolumeclaims": self.claims}
        await run_worker(COMPONENT, self.queue, self.sync, self.api, informers)

    async def sync(self, key: Key) -> None:
        kind, namespace, name = key
        if kind == "volume":
            volume = self.volumes.get("", name)
            if volume is not None:
                await self.sync_volume(volume)
            return
        claim = self.claims.get(namespace, name)
        if claim is None:
            return
        try:
            if ANN_BIND_COMPLETED in annotations(claim):
                await self.sync_bound_claim(claim)
            else:
                await self.sync_unbound_claim(claim)
        except Unreadable as exc:
            log.warning("%s: not syncing: %s", describe(claim), exc)

    # -- claims ---------------------------------------------------------------------------------------
    def _class(self, claim: Obj) -> Obj | None:
        name = storage_class_of(claim)
        return self.classes.get("", name) if name else None

    def _delay_binding(self, claim: Obj) -> bool:
        cls = self._class(claim)
        return cls is not None and cls.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    async def sync_unbound_claim(self, claim: Obj) -> None:
        volume_name = spec_of(claim).get("volumeName")
        if volume_name:
            await self._sync_claim_naming_volume(claim, str(volume_name))
            return
        delay = self._delay_binding(claim)
        volume = find_best_match(claim, self.volumes.items.values(), delay_binding=delay)
        if volume is not None:
            await self.bind(volume, claim)
            return
        if await self._assign_default_class(claim):
            return
        if delay and not annotations(claim).get(ANN_SELECTED_NODE):
            await self._event_waiting_for_consumer(claim)
        elif storage_class_of(claim):
            await self._provision(claim)
            return
        else:
            msg = "no persistent volumes available for this claim and no storage class is set"
            await self.events.event("persistentvolumeclaims", claim, "Normal", "FailedBinding", msg)
        await self.update_claim_status(claim, "Pending", None)

    async def _sync_claim_naming_volume(self, claim: Obj, volume_name: str) -> None:
        volume = self.volumes.get("", volume_name)
        if volume is None:
            await self.update_claim_status(claim, "Pending", None)  # asked for a volume that does not exist
        elif claim_ref(volume) is None:
            why = mismatch(volume, claim)
            if not why:
                await self.bind(volume, claim)
                return
            msg = f'Cannot bind to requested volume "{volume_name}": {why}'
            await self.events.event("persistentvolumeclaims", claim, "Warning", "VolumeMismatch", msg)
            await self.update_claim_status(claim, "Pending", None)
        elif is_bound_to(volume, claim):
            await self.bind(volume, claim)  # finish the binding (the claim's uid on the volume)
        else:
            msg = f'volume "{volume_name}" already bound to a different claim.'
            await self.events.event("persistentvolumeclaims", claim, "Warning", "FailedBinding", msg)
            if ANN_BOUND_BY_CONTROLLER not in annotations(claim):
                await self.update_claim_status(claim, "Pending", None)

    async def _assign_default_class(self, claim: Obj) -> bool:
        """RetroactiveDefaultStorageClass: a claim with no class at all gets today's default class."""
        spec = spec_of(claim)
        if "storageClassName" in spec and spec["storageClassName"] is not None:
            return False
        default = default_class(list(self.classes.items.values()))
        if default is None:
            return False
        new = {**claim, "spec": {**spec, "storageClassName": default["metadata"]["name"]}}
        self.claims.store(await self.api.update("persistentvolumeclaims", new))
        return True

    async def _event_waiting_for_consumer(self, claim: Obj) -> None:
        pods = self._unscheduled_pods_using(claim)
        reason, msg = WAIT_FOR_FIRST_CONSUMER, "waiting for first consumer to be created before binding"
        if len(pods) == 1:
            reason, msg = "WaitForPodScheduled", f"waiting for pod {pods[0]} to be scheduled"
        elif pods:
            reason, msg = "WaitForPodScheduled", f"waiting for pods {','.join(pods)} to be scheduled"
        await self.events.event("persistentvolumeclaims", claim, "Normal", reason, msg)

    def _unscheduled_pods_using(self, claim: Obj) -> list[str]:
        if self.pods is None:
            return []
        ns, name = claim["metadata"].get("namespace", ""), claim["metadata"]["name"]
        out = []
        for (pod_ns, pod_name), pod in self.pods.items.items():
            if pod_ns != ns or spec_of(pod).get("nodeName"):
                continue
            if name in _claims_of_pod(pod):
                out.append(f"{pod_ns}/{pod_name}")
        return sorted(out)

    async def _provision(self, claim: Obj) -> None:
        """``provisionClaim`` for an external provisioner: name it on the claim and wait for it."""
        class_name = storage_class_of(claim)
        cls = self.classes.get("", class_name)
        if cls is None:
            msg = f'storageclass.storage.k8s.io "{class_name}" not found'
            await self.events.event("persistentvolumeclaims", claim, "Warning", "ProvisioningFailed", msg)
            return
        provisioner = str(cls.get("provisioner") or "")
        if provisioner == NO_PROVISIONER or provisioner.startswith("kubernetes.io/"):
            msg = f"no volume plugin matched name: {provisioner}"
            await self.events.event("persistentvolumeclaims", claim, "Warning", "ProvisioningFailed", msg)
            return
        if annotations(claim).get(ANN_STORAGE_PROVISIONER) != provisioner:
            new = _with_annotations(
                claim, **{ANN_STORAGE_PROVISIONER: provisioner, ANN_BETA_STORAGE_PROVISIONER: provisioner}
            )
            claim = await self.api.update("persistentvolumeclaims", new)
            self.claims.store(claim)
        msg = (
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
            "manually by the system administrator. If volume creation is delayed, please verify that the "
            "provisioner is running and correctly registered."
        )
        await self.events.event("persistentvolumeclaims", claim, "Normal", "ExternalProvisioning", msg)

    async def sync_bound_claim(self, claim: Obj) -> None:
        volume_name = spec_of(claim).get("volumeName")
        if not volume_name:
            msg = "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            await self._claim_status_with_event(claim, "Lost", "ClaimLost", msg)
            return
        volume = self.volumes.get("", str(volume_name))
        if volume is None:
            msg = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            await self._claim_status_with_event(claim, "Lost", "ClaimLost", msg)
            return
        ref = claim_ref(volume)
        if ref is None or ref.get("uid") == claim["metadata"].get("uid"):
            await self.bind(volume, claim)  # re-bind an unbound volume; otherwise fix what is missing
            return
        msg = "Two claims are bound to the same volume, this one is bound incorrectly"
        await self._claim_status_with_event(claim, "Lost", "ClaimMisbound", msg)

    async def _claim_status_with_event(self, claim: Obj, phase: str, reason: str, msg: str) -> None:
        if status_of(claim).get("phase") == phase:
            return
        await self.update_claim_status(claim, phase, None)
        await self.events.event("persistentvolumeclaims", claim, "Warning", reason, msg)

    # -- binding --------------------------------------------------------------------------------------
    async def bind(self, volume: Obj, claim: Obj) -> None:
        """Volume claimRef, volume phase, claim volumeName, claim status: upstream's order."""
        volume = await self._bind_volume_to_claim(volume, claim)
        volume = await self.update_volume_phase(volume, "Bound")
        claim = await self._bind_claim_to_volume(claim, volume)
        await self.update_claim_status(claim, "Bound", volume)

    async def _bind_volume_to_claim(self, volume: Obj, claim: Obj) -> Obj:
        meta = claim["metadata"]
        ref = claim_ref(volume) or {}
        new = volume
        by_controller = not is_bound_to(volume, claim)
        if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != (
            meta["name"],
            meta.get("namespace"),
            meta.get("uid"),
        ):
            claim_ref_new = {
                "kind": "PersistentVolumeClaim",
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            new = {**new, "spec": {**spec_of(new), "claimRef": claim_ref_new}}
        if by_controller and ANN_BOUND_BY_CONTROLLER not in annotations(new):
            new = _with_annotations(new, **{ANN_BOUND_BY_CONTROLLER: "yes"})
        if new is volume:
            return volume
        volume = await self.api.update("persistentvolumes", new)
        self.volumes.store(volume)
        return volume

    async def _bind_claim_to_volume(self, claim: Obj, volume: Obj) -> Obj:
        new = claim
        name = volume["metadata"]["name"]
        if spec_of(claim).get("volumeName") != name:
            new = {**new, "spec": {**spec_of(new), "volumeName": name}}
            if ANN_BOUND_BY_CONTROLLER not in annotations(new):
                new = _with_annotations(new, **{ANN_BOUND_BY_CONTROLLER: "yes"})
        if ANN_BIND_COMPLETED not in annotations(new):
            new = _with_annotations(new, **{ANN_BIND_COMPLETED: "yes"})
        if new is claim:
            return claim
        claim = await self.api.update("persistentvolumeclaims", new)
        self.claims.store(claim)
        return claim

    async def update_claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> Obj:
        old = status_of(claim)
        status: dict[str, Any] = {**old, "phase": phase}
        if volume is None:
            status.pop("accessModes", None)
            status.pop("capacity", None)
        else:
            status["accessModes"] = spec_of(volume).get("accessModes")
            if old.get("phase") != phase:  # capacity only when the claim becomes Bound
                have = old.get("capacity") if isinstance(old.get("capacity"), dict) else None
                if have is None or "storage" not in have or capacity_bytes(volume) > _bytes_or_zero(have):
                    status["capacity"] = spec_of(volume).get("capacity")
        if status == old:
            return claim
        claim = await self.api.update("persistentvolumeclaims", {**claim, "status": status}, status=True)
        self.claims.store(claim)
        return claim

    async def update_volume_phase(self, volume: Obj, phase: str, message: str = "") -> Obj:
        old = status_of(volume)
        if old.get("phase") == phase:
            return volume
        status = {k: v for k, v in old.items() if k != "message"} | {"phase": phase}
        if message:
            status["message"] = message
        volume = await self.api.update("persistentvolumes", {**volume, "status": status}, status=True)
        self.volumes.store(volume)
        return volume

    # -- volumes --------------------------------------------------------------------------------------
    async def sync_volume(self, volume: Obj) -> None:
        ref = claim_ref(volume)
        if ref is None or not ref.get("uid"):
            await self.update_volume_phase(volume, "Available")  # unused, or pre-bound: syncClaim binds
            return
        claim = await self._claim_for(volume, ref)
        if claim is None:
            await self._release(volume)
            return
        claim_volume = spec_of(claim).get("volumeName")
        if not claim_volume:
            if volume_mode_mismatch(claim, volume):
                await self._volume_mode_mismatch(volume, claim)
                return
            self.queue.add(_claim_key(claim))  # bound by the scheduler or a provisioner: syncClaim finishes
        elif claim_volume == volume["metadata"]["name"]:
            await self.update_volume_phase(volume, "Bound")
        elif (
            annotations(volume).get(ANN_PROVISIONED_BY)
            and spec_of(volume).get("persistentVolumeReclaimPolicy") == "Delete"
        ):
            await self._release(volume)  # provisioned for a claim that went elsewhere: not needed
        else:
            await self._unbind(volume)

    async def _volume_mode_mismatch(self, volume: Obj, claim: Obj) -> None:
        name, claim_name = volume["metadata"]["name"], claim["metadata"]["name"]
        why = "due to incompatible volumeMode."
        msg = f'Cannot bind PersistentVolume to requested PersistentVolumeClaim "{claim_name}" {why}'
        await self.events.event("persistentvolumes", volume, "Warning", "VolumeMismatch", msg)
        msg = f'Cannot bind PersistentVolume "{name}" to requested PersistentVolumeClaim {why}'
        await self.events.event("persistentvolumeclaims", claim, "Warning", "VolumeMismatch", msg)

    async def _claim_for(self, volume: Obj, ref: Obj) -> Obj | None:
        """The claim the volume's claimRef names, double-checked with the API server as upstream does
        (a claim created by a scheduler or provisioner may not have reached the cache yet)."""
        ns, name = str(ref.get("namespace", "")), str(ref.get("name", ""))
        claim = self.claims.get(ns, name)
        phase = status_of(volume).get("phase")
        if (claim is None and phase not in ("Released", "Failed")) or (
            claim is not None and claim["metadata"].get("uid") != ref.get("uid")
        ):
            try:
                claim = await self.api.get("persistentvolumeclaims", name, ns)
            except NotFound:
                claim = None
        if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
            return None  # deleted, and another claim of that name created
        return claim

    async def _release(self, volume: Obj) -> None:
        if status_of(volume).get("phase") not in ("Released", "Failed"):
            volume = await self.update_volume_phase(volume, "Released")
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy")
        provisioner = str(annotations(volume).get(ANN_PROVISIONED_BY) or "")
        if policy == "Retain":
            return
        if policy == "Delete" and provisioner and not provisioner.startswith("kubernetes.io/"):
            return  # the external provisioner deletes it
        if policy == "Delete":
            name = volume["metadata"]["name"]
            reason = "VolumeFailedDelete"
            msg = (
                f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched'
            )
        elif policy == "Recycle":
            reason, msg = "VolumeFailedRecycle", "No recycler plugin found for the volume!"
        else:
            reason, msg = (
                "VolumeUnknownReclaimPolicy",
                "Volume has unrecognized PersistentVolumeReclaimPolicy",
            )
        if status_of(volume).get("phase") != "Failed":
            volume = await self.update_volume_phase(volume, "Failed", msg)
            await self.events.event("persistentvolumes", volume, "Warning", reason, msg)

    async def _unbind(self, volume: Obj) -> None:
        """``unbindVolume``: forget a claim the controller chose; keep a user's pre-binding, minus the uid."""
        spec = spec_of(volume)
        if ANN_BOUND_BY_CONTROLLER in annotations(volume):
            new = _with_annotations(
                {**volume, "spec": {k: v for k, v in spec.items() if k != "claimRef"}},
                **{ANN_BOUND_BY_CONTROLLER: None},
            )
        else:
            ref = {k: v for k, v in (claim_ref(volume) or {}).items() if k != "uid"}
            new = {**volume, "spec": {**spec, "claimRef": ref}}
        volume = await self.api.update("persistentvolumes", new)
        self.volumes.store(volume)
        await self.update_volume_phase(volume, "Available")


def _bytes_or_zero(resources: dict[str, Any]) -> int:
    try:
        return capacity_bytes({"spec": {"capacity": resources}})
    except Unreadable:
        return 0


def _claims_of_pod(pod: Obj) -> set[str]:
    """Claim names a pod's volumes use: ``persistentVolumeClaim`` ones and generic ephemeral ones."""
    out: set[str] = set()
    volumes = spec_of(pod).get("volumes")
    for vol in volumes if isinstance(volumes, list) else ():
        if not isinstance(vol, dict):
            continue
        pvc = vol.get("persistentVolumeClaim")
        if isinstance(pvc, dict) and pvc.get("claimName"):
            out.add(str(pvc["claimName"]))
        elif isinstance(vol.get("ephemeral"), dict):
            out.add(f"{pod['metadata']['name']}-{vol.get('name', '')}")
    return out
