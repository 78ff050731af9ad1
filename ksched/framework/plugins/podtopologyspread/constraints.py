"""Topology spread constraints, parsed and checked once per pod record.

Upstream (``podtopologyspread/common.go`` ``filterTopologySpreadConstraints``) turns each
``v1.TopologySpreadConstraint`` into an internal record: the selector parsed, ``matchLabelKeys``
merged in as ``key in (value)`` for every listed key the pod carries (the
``MatchLabelKeysInPodTopologySpread`` gate is on by default; since 1.34 the API server also merges
them into ``labelSelector`` at creation, behind ``MatchLabelKeysInPodTopologySpreadSelectorMerge``,
and the scheduler still merges them again, which adds nothing), ``minDomains`` 1 when unset,
``nodeAffinityPolicy`` Honor and ``nodeTaintsPolicy`` Ignore when unset.

The API server rejects malformed constraints, so upstream's scheduler only ever fails on a selector
it cannot parse. ksched can be fed objects no API server validated (``ksched explain`` files, other
servers), so it also refuses an empty ``topologyKey``, a ``maxSkew`` below 1, a ``minDomains`` below
1, an unknown ``whenUnsatisfiable`` or policy: :class:`ObjectError` naming the pod and the field.

Default constraints (``PodTopologySpreadArgs``) carry no selector: a pod gets the one
``helper.DefaultSelector`` builds (:mod:`ksched.cache.selector_owners`), and the ``matchLabelKeys``
of a default constraint are overwritten with it, exactly as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ksched.errors import ObjectError
from ksched.model import _fields as f
from ksched.model.pod import Pod
from ksched.model.selectors import LabelSelector, Requirement, parse_label_selector

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
ACTIONS: Final = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
POLICIES: Final = (HONOR, IGNORE)
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: Final[tuple[Mapping[str, Any], ...]] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
"""Upstream ``systemDefaultConstraints`` (``plugin.go``), in its order."""


@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint as the plugin uses it.

    ``selector`` None is a nil selector (matches nothing). ``self_match``: the pod's own labels
    match the selector (upstream's ``selfMatchNum``); for an empty selector it is True even though
    upstream counts no existing pod for it (``countPodsMatchSelector`` returns 0).
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False
    self_match: bool = False

    @property
    def counts_nothing(self) -> bool:
        """Upstream counts no existing pod for a nil or empty selector."""
        return self.selector is None or self.selector.empty


@dataclass(frozen=True, slots=True)
class PodConstraints:
    """A pod's own constraints split by action (empty when it has none)."""

    hard: tuple[Constraint, ...]
    soft: tuple[Constraint, ...]


def _merge_match_label_keys(
    selector: LabelSelector | None, keys: Sequence[str], labels: Mapping[str, str]
) -> LabelSelector | None:
    """Upstream ``mergeLabelSetWithSelector``: ``key in (value)`` for every listed key the pod has.

    A nil selector stays nil (it has no requirements to keep, and upstream returns it as is).
    """
    found = [(k, labels[k]) for k in keys if k in labels]
    if not found or selector is None:
        return selector
    extra = tuple(Requirement(k, "In", (v,)) for k, v in found)
    return LabelSelector(selector.match_labels, extra + selector.match_expressions)


def parse_constraint(
    raw: Any, obj: str, path: str, labels: Mapping[str, str], *, with_selector: bool = True
) -> Constraint:
    """One constraint; ``ObjectError`` names ``obj`` and the field under ``path``."""
    m = f.mapping(raw, obj, path)
    max_skew = f.integer(m.get("maxSkew"), obj, f"{path}.maxSkew", lo=-(2**31), hi=2**31 - 1)
    if max_skew < 1:
        raise ObjectError(obj, f"{path}.maxSkew", f"must be greater than zero (got {max_skew})")
    key = f.string(m.get("topologyKey"), obj, f"{path}.topologyKey")
    if not key:
        raise ObjectError(obj, f"{path}.topologyKey", "required: a topology key can not be empty")
    action = f.string(m.get("whenUnsatisfiable"), obj, f"{path}.whenUnsatisfiable")
    if action not in ACTIONS:
        raise ObjectError(
            obj,
            f"{path}.whenUnsatisfiable",
            f"unsupported value {action!r}: must be DoNotSchedule or ScheduleAnyway",
        )
    min_domains = 1
    if m.get("minDomains") is not None:
        min_domains = f.integer(m.get("minDomains"), obj, f"{path}.minDomains", lo=-(2**31), hi=2**31 - 1)
        if min_domains < 1:
            raise ObjectError(obj, f"{path}.minDomains", f"must be greater than zero (got {min_domains})")
    policies = []
    for name, default in (("nodeAffinityPolicy", HONOR), ("nodeTaintsPolicy", IGNORE)):
        value = f.string(m.get(name), obj, f"{path}.{name}") or default
        if value not in POLICIES:
            raise ObjectError(obj, f"{path}.{name}", f"unsupported value {value!r}: must be Honor or Ignore")
        policies.append(value == HONOR)
    selector = None
    if with_selector:
        selector = parse_label_selector(m.get("labelSelector"), obj, f"{path}.labelSelector")
        keys = [
            f.string(k, obj, f"{path}.matchLabelKeys[{i}]")
            for i, k in enumerate(f.sequence(m.get("matchLabelKeys"), obj, f"{path}.matchLabelKeys"))
        ]
        selector = _merge_match_label_keys(selector, keys, labels)
    return Constraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=action,
        selector=selector,
        min_domains=min_domains,
        honor_affinity=policies[0],
        honor_taints=policies[1],
        self_match=selector is not None and selector.matches(labels),
    )


def parse_pod_constraints(pod: Pod) -> PodConstraints:
    """The pod's ``spec.topologySpreadConstraints``; raises :class:`ObjectError` on a bad one."""
    obj = pod.described
    hard: list[Constraint] = []
    soft: list[Constraint] = []
    for i, raw in enumerate(pod.topology_spread_constraints):
        c = parse_constraint(raw, obj, f"spec.topologySpreadConstraints[{i}]", pod.labels)
        (hard if c.when_unsatisfiable == DO_NOT_SCHEDULE else soft).append(c)
    return PodConstraints(tuple(hard), tuple(soft))


def parse_default_constraints(raw: Sequence[Mapping[str, Any]]) -> tuple[Constraint, ...]:
    """Default constraints from the args (or the system's), selector to be filled in per pod."""
    return tuple(
        parse_constraint(c, "PodTopologySpreadArgs", f"defaultConstraints[{i}]", {}, with_selector=False)
        for i, c in enumerate(raw)
    )


def with_selector(
    constraints: Sequence[Constraint], selector: LabelSelector, labels: Mapping[str, str]
) -> tuple[Constraint, ...]:
    """Default constraints bound to a pod's default selector (``buildDefaultConstraints``)."""
    matches = selector.matches(labels)
    return tuple(replace(c, selector=selector, self_match=matches) for c in constraints)
