"""Inter-pod (anti-)affinity terms parsed from a pod's raw ``podAffinity`` / ``podAntiAffinity``.

Upstream parses them once per pod into ``PodInfo`` (``pkg/scheduler/framework/types.go``:
``newAffinityTerm``, ``getNamespacesFromPodAffinityTerm``). The rules carried over:

- ``labelSelector`` goes through ``LabelSelectorAsSelector``: nil matches nothing, ``{}`` matches
  everything, a bad operator, key or value is a parse error.
- A term's namespaces are its ``namespaces`` list; when that list is empty *and* the
  ``namespaceSelector`` is nil, the pod's own namespace. ``namespaceSelector`` is kept as a
  selector (nil: matches no namespace, ``{}``: every namespace); resolving it against the
  cluster's namespaces is the plugin's job.
- ``matchLabelKeys`` / ``mismatchLabelKeys`` are ignored: since they went beta (1.31) the API
  server merges them into ``labelSelector`` when the pod is created
  (``pkg/registry/core/pod/strategy.go``), and the scheduler reads only ``labelSelector``.
- A parse error empties only the category it occurs in (upstream leaves those terms nil) and is
  reported in :attr:`PodAffinityTerms.errors`; for an incoming pod any error is a rejection, for
  an existing pod the category simply contributes nothing, as upstream.

An empty ``topologyKey`` is not a parse error upstream (API validation forbids it); its field path
is reported in :attr:`PodAffinityTerms.empty_topology_keys` so the plugin can refuse such an
incoming pod with a clear message, while an existing pod's such term matches no node label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError
from ksched.model import _fields as f
from ksched.model.selectors import LabelSelector, parse_label_selector

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One parsed ``PodAffinityTerm``; hashable, so pods of one workload share their terms."""

    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]) -> bool:
        """Upstream ``AffinityTerm.Matches``: a namespace listed or selected, and the labels selected."""
        if namespace not in self.namespaces and not (
            self.namespace_selector is not None and self.namespace_selector.matches(namespace_labels)
        ):
            return False
        return self.selector is not None and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's four categories of terms, in spec order."""

    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    errors: tuple[ObjectError, ...] = ()
    """One per category that failed to parse (that category is then empty)."""
    empty_topology_keys: tuple[str, ...] = ()
    """Field paths of terms whose ``topologyKey`` is empty."""

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS = PodAffinityTerms()


def _term(raw: Any, namespace: str, obj: str, field: str, empty_keys: list[str]) -> PodAffinityTerm:
    m = f.mapping(raw, obj, field)
    selector = parse_label_selector(m.get("labelSelector"), obj, f"{field}.labelSelector")
    ns_list = tuple(
        f.string(n, obj, f"{field}.namespaces[{i}]")
        for i, n in enumerate(f.sequence(m.get("namespaces"), obj, f"{field}.namespaces"))
    )
    ns_selector = parse_label_selector(m.get("namespaceSelector"), obj, f"{field}.namespaceSelector")
    key = f.string(m.get("topologyKey"), obj, f"{field}.topologyKey")
    if not key:
        empty_keys.append(f"{field}.topologyKey")
    namespaces = frozenset(ns_list) if ns_list or ns_selector is not None else frozenset((namespace,))
    return PodAffinityTerm(selector, namespaces, ns_selector, key)


def _required(
    raw: Any, namespace: str, obj: str, field: str, empty_keys: list[str]
) -> tuple[PodAffinityTerm, ...]:
    return tuple(
        _term(t, namespace, obj, f"{field}[{i}]", empty_keys)
        for i, t in enumerate(f.sequence(raw, obj, field))
    )


def _preferred(
    raw: Any, namespace: str, obj: str, field: str, empty_keys: list[str]
) -> tuple[WeightedPodAffinityTerm, ...]:
    out = []
    for i, w in enumerate(f.sequence(raw, obj, field)):
        wm = f.mapping(w, obj, f"{field}[{i}]")
        weight = f.integer(wm.get("weight"), obj, f"{field}[{i}].weight", lo=0, hi=100)
        term = _term(wm.get("podAffinityTerm"), namespace, obj, f"{field}[{i}].podAffinityTerm", empty_keys)
        out.append(WeightedPodAffinityTerm(weight, term))
    return tuple(out)


def parse_pod_affinity_terms(
    affinity: Mapping[str, Any], namespace: str, obj: str, field: str = "spec.affinity"
) -> PodAffinityTerms:
    """Parse a pod's raw ``podAffinity`` / ``podAntiAffinity`` leniently (see the module doc)."""
    if not affinity:
        return NO_TERMS
    errors: list[ObjectError] = []
    empty_keys: list[str] = []
    parts: list[Any] = []
    for part in ("podAffinity", "podAntiAffinity"):
        raw = affinity.get(part)
        pf = f"{field}.{part}"
        try:
            m = f.mapping(raw, obj, pf)
        except ObjectError as exc:
            errors.append(exc)
            m = {}
        for kind, parser in ((REQUIRED, _required), (PREFERRED, _preferred)):
            try:
                parts.append(parser(m.get(kind), namespace, obj, f"{pf}.{kind}", empty_keys))
            except ObjectError as exc:
                errors.append(exc)
                parts.append(())
    return PodAffinityTerms(
        required_affinity=parts[0],
        preferred_affinity=parts[1],
        required_anti_affinity=parts[2],
        preferred_anti_affinity=parts[3],
        errors=tuple(errors),
        empty_topology_keys=tuple(empty_keys),
    )
