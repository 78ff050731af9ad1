"""Informer events of the storage objects: into the cache's :class:`~ksched.cache.volumes.VolumeStore`,
and out as the cluster events the volume plugins register.

Upstream's ``addAllEventHandlers`` registers, for each storage kind a plugin asks for, an add and an
update handler that moves parked pods with ``PersistentVolumeClaimAdd``, ``StorageClassUpdate`` and so
on, and a delete handler for the kinds registered with Delete (VolumeAttachment). An update whose
object the store already holds at that resourceVersion (a resync) changes nothing and moves nothing.

A malformed object is kept out of the store, and its problem is remembered by key
(:attr:`VolumeStore.problems`), so that a pod waiting for it is told what is wrong with it instead
of being told it does not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.kube import events as kev
from ksched.scheduler import events_registry as cev
from ksched.scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)

RESOURCE_OF: Mapping[str, str] = {
    vol.PERSISTENT_VOLUMES: cev.PERSISTENT_VOLUME,
    vol.PERSISTENT_VOLUME_CLAIMS: cev.PERSISTENT_VOLUME_CLAIM,
    vol.STORAGE_CLASSES: cev.STORAGE_CLASS,
    vol.CSI_NODES: cev.CSI_NODE,
    vol.CSI_DRIVERS: cev.CSI_DRIVER,
    vol.CSI_STORAGE_CAPACITIES: cev.CSI_STORAGE_CAPACITY,
    vol.VOLUME_ATTACHMENTS: cev.VOLUME_ATTACHMENT,
}
"""Informer resource -> upstream's ``EventResource``."""


def key_of(kind: str, obj: Any) -> str:
    """The store key of a decoded storage object: ``namespace/name`` when namespaced, else ``name``."""
    namespace = getattr(obj, "namespace", "")
    return f"{namespace}/{obj.name}" if namespace else obj.name


class StorageEventHandlers:
    """Applies storage informer events (scheduling thread only, called by the cluster handlers)."""

    def __init__(self, cache: ClusterCache, queue: SchedulingQueue) -> None:
        self.store = cache.volumes
        self.queue = queue

    def handle(self, ev: kev.InformerEvent) -> None:
        if isinstance(ev, kev.Upserted):
            self._upserted(ev.kind, ev.obj)
        elif isinstance(ev, kev.Deleted):
            self._deleted(ev.kind, key_of(ev.kind, ev.obj))
        elif isinstance(ev, kev.Relisted):
            self._relisted(ev)
        elif isinstance(ev, kev.Invalid):
            self._invalid(ev)

    def _upserted(self, kind: str, obj: Any) -> None:
        key = key_of(kind, obj)
        self.store.problems.pop((kind, key), None)
        old = self.store.get(kind, key)
        if not self.store.upsert(kind, obj):
            return
        action = cev.ActionType.ADD if old is None else cev.ActionType.UPDATE
        event = cev.ClusterEvent(RESOURCE_OF[kind], action)
        self.queue.move_all_to_active_or_backoff(event, old=old, new=obj)

    def _deleted(self, kind: str, key: str) -> None:
        self.store.problems.pop((kind, key), None)
        old = self.store.get(kind, key)
        if old is None:
            return
        self.store.delete(kind, key)
        event = cev.ClusterEvent(RESOURCE_OF[kind], cev.ActionType.DELETE)
        self.queue.move_all_to_active_or_backoff(event, old=old)

    def _relisted(self, ev: kev.Relisted) -> None:
        live = {key_of(ev.kind, o) for o in ev.objs} | {i.key for i in ev.invalid}
        for key in [k for k in self.store.keys(ev.kind) if k not in live]:
            self._deleted(ev.kind, key)
        for obj in ev.objs:
            self._upserted(ev.kind, obj)
        for bad in ev.invalid:
            self._invalid(bad)

    def _invalid(self, ev: kev.Invalid) -> None:
        if ev.event_type == "DELETED":
            self._deleted(ev.kind, ev.key)
            return
        log.error("%s %s skipped: %s", ev.kind, ev.key, ev.error)
        if ev.key in self.store.keys_set(ev.kind):
            self.store.delete(ev.kind, ev.key)  # its last good version no longer describes it
        self.store.problems[(ev.kind, ev.key)] = str(ev.error)
