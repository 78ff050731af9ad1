"""The storage objects the volume plugins read: PVs, PVCs, classes, CSI objects, and assumed bindings.

Fed by the informer handlers on the scheduling thread (the only writer, like the rest of the cache).

**Assumed bindings.** VolumeBinding's Reserve assumes a PV bound to a claim, or a claim with a selected
node, before any of it is written; PreBind writes it; Unreserve restores what the informer last
delivered. :class:`AssumeTable` is upstream's ``AssumeCache`` (``pkg/scheduler/util/assumecache``):
each object has the informer's version (``api``) and the latest one (``latest``: the informer's, or
an assumed one). An informer version replaces the latest only when its resourceVersion is newer
than the latest's (so an informer resync does not undo an assumption; the write's own answer, once
the informer delivers it, does); objects without a resourceVersion (cluster files) always replace
an unassumed one; :meth:`AssumeTable.assume` refuses an object older than the
latest; :meth:`AssumeTable.restore` drops the assumption.

**Listeners.** Indexes derived from pods *and* storage objects (which volumes a pod attaches to its
node, for NodeVolumeLimits) subscribe with :meth:`VolumeStore.listen` and are told which claim,
volume, class or CSINode changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from ksched.errors import CacheError
from ksched.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

PERSISTENT_VOLUMES = "persistentvolumes"
PERSISTENT_VOLUME_CLAIMS = "persistentvolumeclaims"
STORAGE_CLASSES = "storageclasses"
CSI_NODES = "csinodes"
CSI_DRIVERS = "csidrivers"
CSI_STORAGE_CAPACITIES = "csistoragecapacities"
VOLUME_ATTACHMENTS = "volumeattachments"
KINDS = (
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    STORAGE_CLASSES,
    CSI_NODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    VOLUME_ATTACHMENTS,
)
"""Informer resource names of the storage objects (as ``InformerEvent.kind``)."""


class Versioned(Protocol):
    @property
    def resource_version(self) -> int: ...


T = TypeVar("T", PersistentVolume, PersistentVolumeClaim)


class AssumeConflict(CacheError):
    """An assumed object is older than what the cache already holds (upstream: "is out of sync")."""


class AssumeTable(Generic[T]):
    """Objects by key, each with the informer's version and the latest (possibly assumed) one."""

    def __init__(self, description: str, key: Callable[[T], str]) -> None:
        self.description = description
        """How errors name the type (upstream's ``v1.PersistentVolume``)."""
        self._key = key
        self._api: dict[str, T] = {}
        self._latest: dict[str, T] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def __contains__(self, key: object) -> bool:
        return key in self._latest

    def get(self, key: str) -> T | None:
        """The latest version: assumed, or the informer's."""
        return self._latest.get(key)

    def get_api(self, key: str) -> T | None:
        """What the informer last delivered."""
        return self._api.get(key)

    def values(self) -> Iterable[T]:
        return self._latest.values()

    def assumed(self) -> Iterator[str]:
        """Keys whose latest version is an assumption (for the recount in tests)."""
        return (k for k, v in self._latest.items() if v is not self._api.get(k))

    def upsert(self, obj: T) -> tuple[T | None, T] | None:
        """An informer add or update; (old latest, new) when the latest changed, else None."""
        key = self._key(obj)
        old = self._latest.get(key)
        if old is not None and obj.resource_version <= old.resource_version:
            unversioned = obj.resource_version == 0 and old is self._api.get(key)
            if not unversioned:  # a resync, or an assumption not yet overtaken
                return None
        self._api[key] = obj
        self._latest[key] = obj
        return old, obj

    def delete(self, key: str) -> T | None:
        self._api.pop(key, None)
        return self._latest.pop(key, None)

    def assume(self, obj: T) -> T | None:
        """Make ``obj`` the latest version until restored or overtaken; returns the previous latest."""
        key = self._key(obj)
        old = self._latest.get(key)
        if old is None:
            raise AssumeConflict(f"could not find {self.description} {json.dumps(key)}")
        if obj.resource_version < old.resource_version:
            raise AssumeConflict(
                f"{self.description} {json.dumps(key)} is out of sync (stored: {old.resource_version},"
                f" assume: {obj.resource_version})"
            )
        self._latest[key] = obj
        return old

    def restore(self, key: str) -> T | None:
        """Drop an assumption: the latest is the informer's version again (None when gone)."""
        api = self._api.get(key)
        if api is None:
            self._latest.pop(key, None)
        else:
            self._latest[key] = api
        return api


class VolumeListener(Protocol):
    """An index told about storage changes (see the module docstring)."""

    def claim_changed(self, key: str) -> None: ...
    def volume_changed(self, name: str) -> None: ...
    def class_changed(self, name: str) -> None: ...
    def csi_node_changed(self, name: str) -> None: ...
    def attachment_changed(self, old: VolumeAttachment | None, new: VolumeAttachment | None) -> None: ...


class VolumeStore:
    """Every storage object the scheduler watches, by key (scheduling thread only)."""

    def __init__(self) -> None:
        self.pvs: AssumeTable[PersistentVolume] = AssumeTable("v1.PersistentVolume", lambda pv: pv.name)
        self.pvcs: AssumeTable[PersistentVolumeClaim] = AssumeTable(
            "v1.PersistentVolumeClaim", lambda pvc: pvc.key
        )
        self.classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}
        """CSIStorageCapacities by ``namespace/name``."""
        self.attachments: dict[str, VolumeAttachment] = {}
        self.generation = 0
        """Bumped on every change of any storage object (a memo key)."""
        self.problems: dict[tuple[str, str], str] = {}
        """(kind, key) -> why the informer's latest version of that object could not be read; such an
        object is not in the store, and the plugins report this instead of "not found"."""
        self._by_class: dict[str, dict[str, None]] = {}
        self._listeners: list[VolumeListener] = []

    def listen(self, listener: VolumeListener) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ queries
    def pv(self, name: str) -> PersistentVolume | None:
        return self.pvs.get(name)

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.pvcs.get(f"{namespace}/{name}")

    def pvs_of_class(self, storage_class: str) -> list[PersistentVolume]:
        """Every PV of a class, latest versions, in name order (upstream ``ListPVs``)."""
        names = self._by_class.get(storage_class, {})
        return [pv for n in sorted(names) if (pv := self.pvs.get(n)) is not None]

    # ------------------------------------------------------------------ informer events
    def upsert(self, kind: str, obj: object) -> bool:
        """An add or update; whether anything the plugins read changed."""
        self.generation += 1
        if kind == PERSISTENT_VOLUMES:
            assert isinstance(obj, PersistentVolume)
            return self._pv_upserted(obj)
        if kind == PERSISTENT_VOLUME_CLAIMS:
            assert isinstance(obj, PersistentVolumeClaim)
            if self.pvcs.upsert(obj) is None:
                return False
            self._tell(lambda li: li.claim_changed(obj.key))
            return True
        if kind == STORAGE_CLASSES:
            assert isinstance(obj, StorageClass)
            self.classes[obj.name] = obj
            self._tell(lambda li: li.class_changed(obj.name))
        elif kind == CSI_NODES:
            assert isinstance(obj, CSINode)
            self.csi_nodes[obj.name] = obj
            self._tell(lambda li: li.csi_node_changed(obj.name))
        elif kind == CSI_DRIVERS:
            assert isinstance(obj, CSIDriver)
            self.csi_drivers[obj.name] = obj
        elif kind == CSI_STORAGE_CAPACITIES:
            assert isinstance(obj, CSIStorageCapacity)
            self.capacities[obj.key] = obj
        elif kind == VOLUME_ATTACHMENTS:
            assert isinstance(obj, VolumeAttachment)
            old = self.attachments.get(obj.name)
            self.attachments[obj.name] = obj
            self._tell(lambda li: li.attachment_changed(old, obj))
        else:
            raise CacheError(f"not a storage kind: {kind}")
        return True

    def delete(self, kind: str, key: str) -> None:
        """A delete, by the object's key (``name``, or ``namespace/name`` when namespaced)."""
        self.generation += 1
        if kind == PERSISTENT_VOLUMES:
            old = self.pvs.delete(key)
            if old is not None:
                self._by_class.get(old.storage_class, {}).pop(key, None)
            self._tell(lambda li: li.volume_changed(key))
        elif kind == PERSISTENT_VOLUME_CLAIMS:
            self.pvcs.delete(key)
            self._tell(lambda li: li.claim_changed(key))
        elif kind == STORAGE_CLASSES:
            self.classes.pop(key, None)
            self._tell(lambda li: li.class_changed(key))
        elif kind == CSI_NODES:
            self.csi_nodes.pop(key, None)
            self._tell(lambda li: li.csi_node_changed(key))
        elif kind == CSI_DRIVERS:
            self.csi_drivers.pop(key, None)
        elif kind == CSI_STORAGE_CAPACITIES:
            self.capacities.pop(key, None)
        elif kind == VOLUME_ATTACHMENTS:
            gone = self.attachments.pop(key, None)
            self._tell(lambda li: li.attachment_changed(gone, None))
        else:
            raise CacheError(f"not a storage kind: {kind}")

    def get(self, kind: str, key: str) -> object | None:
        """The informer's version of one object (not an assumption), for the old object of an
        event's queueing hints."""
        if kind == PERSISTENT_VOLUMES:
            return self.pvs.get_api(key)
        if kind == PERSISTENT_VOLUME_CLAIMS:
            return self.pvcs.get_api(key)
        table: Mapping[str, object] = self.keys_set(kind)  # type: ignore[assignment]
        return table.get(key)

    def keys_set(self, kind: str) -> Container[str]:
        """The keys of a kind, for membership tests."""
        if kind == PERSISTENT_VOLUMES:
            return self.pvs
        if kind == PERSISTENT_VOLUME_CLAIMS:
            return self.pvcs
        return {
            STORAGE_CLASSES: self.classes,
            CSI_NODES: self.csi_nodes,
            CSI_DRIVERS: self.csi_drivers,
            CSI_STORAGE_CAPACITIES: self.capacities,
            VOLUME_ATTACHMENTS: self.attachments,
        }[kind]

    def keys(self, kind: str) -> list[str]:
        """Every key of a kind (the relist reconciles against it)."""
        if kind == PERSISTENT_VOLUMES:
            return [pv.name for pv in self.pvs.values()]
        if kind == PERSISTENT_VOLUME_CLAIMS:
            return [pvc.key for pvc in self.pvcs.values()]
        return list(self.keys_set(kind))  # type: ignore[call-overload]

    def problem(self, kind: str, key: str) -> str | None:
        """Why the object ``key`` of ``kind`` is missing, when it is missing because it is malformed."""
        return self.problems.get((kind, key))

    # ------------------------------------------------------------------ assumed bindings
    def assume_pv(self, pv: PersistentVolume) -> None:
        old = self.pvs.assume(pv)
        self._reclass(old, pv)
        self.generation += 1
        self._tell(lambda li: li.volume_changed(pv.name))

    def restore_pv(self, name: str) -> None:
        old = self.pvs.get(name)
        api = self.pvs.restore(name)
        if api is not None and old is not api:
            self._reclass(old, api)
        self.generation += 1
        self._tell(lambda li: li.volume_changed(name))

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self.pvcs.assume(pvc)
        self.generation += 1
        self._tell(lambda li: li.claim_changed(pvc.key))

    def restore_pvc(self, key: str) -> None:
        self.pvcs.restore(key)
        self.generation += 1
        self._tell(lambda li: li.claim_changed(key))

    # ------------------------------------------------------------------ internals
    def _pv_upserted(self, pv: PersistentVolume) -> bool:
        changed = self.pvs.upsert(pv)
        if changed is None:
            return False
        self._reclass(changed[0], pv)
        self._tell(lambda li: li.volume_changed(pv.name))
        return True

    def _reclass(self, old: PersistentVolume | None, new: PersistentVolume) -> None:
        if old is not None and old.storage_class != new.storage_class:
            self._by_class.get(old.storage_class, {}).pop(old.name, None)
        self._by_class.setdefault(new.storage_class, {})[new.name] = None

    def _tell(self, call: Callable[[VolumeListener], None]) -> None:
        for listener in self._listeners:
            call(listener)
