"""Services, ReplicationControllers, ReplicaSets and StatefulSets: the default spreading selector.

PodTopologySpread's default constraints (``defaultingType: System``, or ``List``) apply to a pod
without constraints of its own, with a selector built by upstream's ``helper.DefaultSelector``:

- the label maps of every Service in the pod's namespace whose (non-nil) selector matches the pod's
  labels, merged;
- plus, if the pod's controlling ownerReference is a ``v1`` ReplicationController found in the
  namespace, that controller's label map (merged the same way);
- or, for an ``apps/v1`` ReplicaSet or StatefulSet found there, that object's LabelSelector
  requirements (a nil or empty selector adds nothing).

An empty result means "no default constraints". The answer depends only on the pod's namespace,
labels and controller reference, so it is memoized on those and dropped whenever any of these objects
changes (``generation``). A cluster without any of them answers in one dictionary lookup.

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ksched.model.selectors import LabelSelector, Requirement
from ksched.model.workloads import (
    CONTROLLER_API_VERSIONS,
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
    Workload,
)

MEMO_LIMIT = 4096
"""Memoized answers kept; all are dropped beyond this (they are cheap to rebuild)."""

_MemoKey = tuple[str, frozenset[tuple[str, str]], tuple[str, str, str] | None]


class SelectorOwnerIndex:
    """The four kinds by namespace and name, and the memoized default selector of a pod."""

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[str, dict[str, Workload]]] = {k: {} for k in CONTROLLER_API_VERSIONS}
        self._by_kind[SERVICE] = {}
        self._count = 0
        self.generation = 0
        """Bumped on every change; memoized selectors are only valid for one generation."""
        self._memo: dict[_MemoKey, LabelSelector | None] = {}
        self._memo_generation = 0

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._count

    def get(self, kind: str, namespace: str, name: str) -> Workload | None:
        return self._by_kind.get(kind, {}).get(namespace, {}).get(name)

    def objects(self, kind: str) -> list[Workload]:
        return [w for ns in self._by_kind.get(kind, {}).values() for w in ns.values()]

    def default_selector(
        self,
        namespace: str,
        labels: Mapping[str, str],
        controller: tuple[str, str, str] | None,
    ) -> LabelSelector | None:
        """Upstream ``DefaultSelector`` for a pod; ``None`` when it is empty (no default constraints)."""
        if self._count == 0:
            return None
        if not self._by_kind[SERVICE].get(namespace) and controller is None:
            return None
        if self._memo_generation != self.generation:
            self._memo.clear()
            self._memo_generation = self.generation
        key = (namespace, frozenset(labels.items()), controller)
        if key in self._memo:
            return self._memo[key]
        found = self._build(namespace, labels, controller)
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = found
        return found

    def _build(
        self, namespace: str, labels: Mapping[str, str], controller: tuple[str, str, str] | None
    ) -> LabelSelector | None:
        merged: dict[str, str] = {}
        for svc in self._by_kind[SERVICE].get(namespace, {}).values():
            sel = svc.match_labels
            if sel is not None and all(labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)
        expressions: tuple[Requirement, ...] = ()
        if controller is not None:
            api_version, kind, name = controller
            if CONTROLLER_API_VERSIONS.get(kind) == api_version:
                owner = self.get(kind, namespace, name)
                if owner is not None:
                    if kind == REPLICATION_CONTROLLER:
                        merged.update(owner.match_labels or {})
                    elif owner.selector is not None:
                        rs = owner.selector
                        # LabelSelectorAsSelector turns matchLabels into equality requirements too.
                        expressions = rs.match_expressions
                        extra = [(k, v) for k, v in rs.match_labels]
                        if extra:
                            return _selector(merged, extra, expressions)
        return _selector(merged, [], expressions)

    # ------------------------------------------------------------------ mutators (scheduling thread)
    def upsert(self, obj: Workload) -> None:
        by_ns = self._by_kind[obj.kind].setdefault(obj.namespace, {})
        if obj.name not in by_ns:
            self._count += 1
        by_ns[obj.name] = obj
        self.generation += 1

    def delete(self, obj: Workload) -> None:
        by_ns = self._by_kind[obj.kind].get(obj.namespace)
        if by_ns is None or by_ns.pop(obj.name, None) is None:
            return
        if not by_ns:
            del self._by_kind[obj.kind][obj.namespace]
        self._count -= 1
        self.generation += 1

    def replace(self, kind: str, objs: Iterable[Workload]) -> None:
        """A relist of ``kind``: exactly ``objs`` exist now."""
        old = self._by_kind[kind]
        self._count -= sum(len(ns) for ns in old.values())
        self._by_kind[kind] = {}
        for obj in objs:
            self.upsert(obj)
        self.generation += 1


def _selector(
    merged: Mapping[str, str], extra_labels: list[tuple[str, str]], expressions: tuple[Requirement, ...]
) -> LabelSelector | None:
    """A LabelSelector equivalent to the merged map plus a controller's requirements; None if empty.

    Upstream adds the controller's requirements to the map's selector, so a key the map names can
    also carry a (compatible) requirement; an equality requirement on such a key is kept as an
    ``In`` expression so that nothing is lost when both name it.
    """
    exprs = list(expressions)
    labels = dict(merged)
    for k, v in extra_labels:
        if k in labels and labels[k] != v:
            exprs.append(Requirement(k, "In", (v,)))
        else:
            labels[k] = v
    if not labels and not exprs:
        return None
    return LabelSelector(tuple(sorted(labels.items())), tuple(exprs))


__all__ = ["REPLICATION_CONTROLLER", "REPLICA_SET", "SERVICE", "STATEFUL_SET", "SelectorOwnerIndex"]
