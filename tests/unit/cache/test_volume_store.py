"""VolumeStore: upstream's assume-cache rules, the class index, claim users and the storage handlers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.cache.volumes import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, AssumeConflict
from ksched.errors import ObjectError
from ksched.kube import events as kev
from ksched.model.storage import pv_from_dict, pvc_from_dict
from ksched.scheduler.storage_handlers import StorageEventHandlers


def _pv(name: str, rv: int, cls: str = "fast") -> object:
    return pv_from_dict(
        {"metadata": {"name": name, "resourceVersion": str(rv)}, "spec": {"storageClassName": cls}}
    )


def _pvc(name: str, rv: int) -> object:
    return pvc_from_dict({"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}})


def test_assume_survives_resync_and_yields_to_newer() -> None:
    store = ClusterCache().volumes
    store.upsert(PERSISTENT_VOLUMES, _pv("a", 5))
    api = store.pvs.get_api("a")
    assumed = replace(api, phase="Bound")  # type: ignore[type-var]
    store.assume_pv(assumed)
    assert store.pv("a") is assumed and list(store.pvs.assumed()) == ["a"]
    assert not store.upsert(PERSISTENT_VOLUMES, _pv("a", 5))  # a resync keeps the assumption
    assert store.pv("a") is assumed
    store.upsert(PERSISTENT_VOLUMES, _pv("a", 6))  # the write's answer, delivered, replaces it
    assert store.pv("a") is store.pvs.get_api("a") and not list(store.pvs.assumed())
    with pytest.raises(AssumeConflict, match=r"out of sync \(stored: 6, assume: 5\)"):
        store.assume_pv(assumed)


def test_restore_and_class_index() -> None:
    store = ClusterCache().volumes
    store.upsert(PERSISTENT_VOLUMES, _pv("a", 1, "fast"))
    store.assume_pv(replace(store.pv("a"), storage_class="slow"))  # type: ignore[type-var]
    assert [p.name for p in store.pvs_of_class("slow")] == ["a"] and not store.pvs_of_class("fast")
    store.restore_pv("a")
    assert [p.name for p in store.pvs_of_class("fast")] == ["a"] and not store.pvs_of_class("slow")
    with pytest.raises(AssumeConflict, match="could not find"):
        store.assume_pvc(_pvc("nope", 1))  # type: ignore[arg-type]


class _Queue:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.objects: list[tuple[object, object]] = []

    def move_all_to_active_or_backoff(self, event: object, *, old: object = None, new: object = None) -> None:
        self.events.append(event.label)  # type: ignore[attr-defined]
        self.objects.append((old, new))


def test_handlers_move_pods_and_remember_problems() -> None:
    cache, queue = ClusterCache(), _Queue()
    handlers = StorageEventHandlers(cache, queue)  # type: ignore[arg-type]
    handlers.handle(kev.Upserted(PERSISTENT_VOLUME_CLAIMS, _pvc("c", 1)))
    handlers.handle(kev.Upserted(PERSISTENT_VOLUME_CLAIMS, _pvc("c", 1)))  # resync: nothing moves
    handlers.handle(kev.Upserted(PERSISTENT_VOLUME_CLAIMS, _pvc("c", 2)))
    assert queue.events == ["PersistentVolumeClaimAdd", "PersistentVolumeClaimUpdate"]
    bad = ObjectError("PersistentVolumeClaim ns/c", "spec.resources.requests.storage", "invalid quantity 'x'")
    handlers.handle(kev.Invalid(PERSISTENT_VOLUME_CLAIMS, "ns", "c", "u", bad, event_type="MODIFIED"))
    assert cache.volumes.pvc("ns", "c") is None
    assert "spec.resources.requests.storage" in (
        cache.volumes.problem(PERSISTENT_VOLUME_CLAIMS, "ns/c") or ""
    )
    handlers.handle(kev.Relisted(PERSISTENT_VOLUME_CLAIMS, (_pvc("c", 3),)))
    assert (
        cache.volumes.pvc("ns", "c") is not None
        and cache.volumes.problem(PERSISTENT_VOLUME_CLAIMS, "ns/c") is None
    )
