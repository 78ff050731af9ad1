"""Decode, default and validate the args of in-tree plugins (``profiles[*].pluginConfig[*].args``).

One function per args type, like upstream's ``validation_pluginargs.go``: each reads the raw
mapping strictly (unknown fields and wrong types raise at once), applies upstream's defaulting
(``defaults.go`` ``SetDefaults_*Args``), then appends every validation problem to ``errs`` with
the full field path, so a config with several mistakes reports all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ksched.config import _decode as d
from ksched.config import names as n
from ksched.config._names_validation import label_value_problems, qualified_name_problems
from ksched.config.defaults import (
    API_VERSION,
    ARGS_KIND,
    DEFAULT_RESOURCES,
    MAX_CUSTOM_PRIORITY_SCORE,
    REQUESTED_TO_CAPACITY_RATIO,
    SCORING_STRATEGY_TYPES,
)
from ksched.config.dra_args import dynamic_resources
from ksched.config.types import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from ksched.errors import ConfigError
from ksched.model.labels import parse_go_int64

Errors = list[ConfigError]
_TYPE_META = ("apiVersion", "kind")


def unsupported(path: str, value: object, supported: tuple[str, ...]) -> ConfigError:
    """``path: unsupported value "x"``, with the supported values attached as a note."""
    err = ConfigError(path, f"unsupported value {d.quote(value)}")
    err.add_note("supported values: " + ", ".join(d.quote(s) for s in supported))
    return err


def invalid(path: str, value: object, why: str) -> ConfigError:
    return ConfigError(path, f"invalid value {d.quote(value)}: {why}")


def decode_plugin_args(name: str, raw: object, path: str, errs: Errors) -> object:
    """Typed args for in-tree ``name`` (defaulted; problems appended to ``errs``); else ``raw``.

    ``raw`` is the ``args`` value of a pluginConfig entry (None when absent) and ``path`` its
    field path (``profiles[0].pluginConfig[1].args``).
    """
    decoder = _DECODERS.get(name)
    if decoder is None:
        if name in n.IN_TREE and raw not in (None, {}):
            # Upstream hands such args to a plugin that never reads them; ksched refuses them.
            errs.append(ConfigError(path, f"plugin {name} takes no args; remove them"))
        return dict(raw) if isinstance(raw, Mapping) else raw
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise d.wrong_type(path, "an object", raw)
    kind = raw.get("kind")
    if kind is not None and kind != ARGS_KIND[name]:
        errs.append(invalid(path, kind, f"has to match plugin args: plugin {name} takes {ARGS_KIND[name]}"))
        return dict(raw)
    api_version = raw.get("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        errs.append(unsupported(d.child(path, "apiVersion"), api_version, (API_VERSION,)))
    return decoder(raw, path, errs)


# --- NodeResourcesFit -------------------------------------------------------------------------


def _resources(raw: Mapping[str, Any], path: str) -> list[ResourceSpec]:
    out = []
    for i, item in enumerate(d.seq(raw, "resources", path)):
        p = d.index(d.child(path, "resources"), i)
        m = d.mapping(item, p, ("name", "weight"))
        weight = d.integer(m, "weight", p, 0, bits=64)
        out.append(ResourceSpec(name=d.string(m, "name", p), weight=weight or 1))
    return out


def _shape(items: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    if items is None:
        return ()
    if not isinstance(items, list | tuple):
        raise d.wrong_type(path, "a list", items)
    out = []
    for i, item in enumerate(items):
        p = d.index(path, i)
        m = d.mapping(item, p, ("utilization", "score"))
        out.append(
            UtilizationShapePoint(
                utilization=d.integer(m, "utilization", p, 0), score=d.integer(m, "score", p, 0)
            )
        )
    return tuple(out)


def validate_shape(shape: tuple[UtilizationShapePoint, ...], path: str, errs: Errors) -> None:
    """Upstream ``validateFunctionShape``: non-empty, strictly increasing, in range."""
    if not shape:
        errs.append(ConfigError(path, "required: at least one point must be specified"))
        return
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    d.child(d.index(path, i), "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errs.append(
                invalid(
                    d.child(d.index(path, i), "utilization"), point.utilization, "not in valid range [0, 100]"
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                invalid(
                    d.child(d.index(path, i), "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )


def _fit(raw: Mapping[str, Any], path: str, errs: Errors) -> NodeResourcesFitArgs:
    d.mapping(raw, path, (*_TYPE_META, "ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
    ignored = d.string_list(raw, "ignoredResources", path)
    groups = d.string_list(raw, "ignoredResourceGroups", path)
    sp = d.child(path, "scoringStrategy")
    raw_strategy = raw.get("scoringStrategy")
    if raw_strategy is None:
        strategy = ScoringStrategy(type="LeastAllocated", resources=DEFAULT_RESOURCES)
        rtcr_set = False
    else:
        m = d.mapping(raw_strategy, sp, ("type", "resources", "requestedToCapacityRatio"))
        resources = tuple(_resources(m, sp)) or DEFAULT_RESOURCES
        rtcr_path = d.child(sp, "requestedToCapacityRatio")
        rtcr = m.get("requestedToCapacityRatio")
        rtcr_set = rtcr is not None
        shape: tuple[UtilizationShapePoint, ...] = ()
        if rtcr_set:
            shape = _shape(d.mapping(rtcr, rtcr_path, ("shape",)).get("shape"), d.child(rtcr_path, "shape"))
        strategy = ScoringStrategy(type=d.string(m, "type", sp), resources=resources, shape=shape)

    for i, res in enumerate(ignored):
        errs.extend(
            ConfigError(d.index(d.child(path, "ignoredResources"), i), f"invalid value {d.quote(res)}: {p}")
            for p in qualified_name_problems(res)
        )
    for i, group in enumerate(groups):
        gp = d.index(d.child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            errs.append(invalid(gp, group, "resource group name can't contain '/'"))
        errs.extend(
            ConfigError(gp, f"invalid value {d.quote(group)}: {p}") for p in qualified_name_problems(group)
        )
    if strategy.type not in SCORING_STRATEGY_TYPES:
        errs.append(unsupported(d.child(sp, "type"), strategy.type, SCORING_STRATEGY_TYPES))
    for i, res in enumerate(strategy.resources):
        if not 0 < res.weight <= 100:
            errs.append(
                invalid(
                    d.child(d.index(d.child(sp, "resources"), i), "weight"),
                    res.weight,
                    f"resource weight of {res.name} not in valid range (0, 100]",
                )
            )
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if not rtcr_set:
            errs.append(
                ConfigError(
                    d.child(sp, "requestedToCapacityRatio"),
                    "required: must be specified when type is RequestedToCapacityRatio",
                )
            )
        else:
            validate_shape(strategy.shape, d.child(d.child(sp, "requestedToCapacityRatio"), "shape"), errs)
    elif rtcr_set:
        errs.append(
            ConfigError(
                d.child(sp, "requestedToCapacityRatio"),
                "forbidden: must be nil when type is not RequestedToCapacityRatio",
            )
        )
    return NodeResourcesFitArgs(
        ignored_resources=ignored, ignored_resource_groups=groups, scoring_strategy=strategy
    )


# --- NodeResourcesBalancedAllocation ----------------------------------------------------------


def _balanced(raw: Mapping[str, Any], path: str, errs: Errors) -> NodeResourcesBalancedAllocationArgs:
    d.mapping(raw, path, (*_TYPE_META, "resources"))
    resources = tuple(_resources(raw, path)) or DEFAULT_RESOURCES
    seen: set[str] = set()
    for i, res in enumerate(resources):
        rp = d.index(d.child(path, "resources"), i)
        if res.name in seen:
            errs.append(ConfigError(d.child(rp, "name"), f"duplicate value {d.quote(res.name)}"))
        seen.add(res.name)
        if res.weight != 1:
            errs.append(invalid(d.child(rp, "weight"), res.weight, "must be 1"))
    return NodeResourcesBalancedAllocationArgs(resources=resources)


# --- NodeAffinity -----------------------------------------------------------------------------

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_REQUIREMENT_FIELDS = ("key", "operator", "values")


def _requirements(term: Mapping[str, Any], key: str, path: str, errs: Errors) -> None:
    for j, item in enumerate(d.seq(term, key, path)):
        p = d.index(d.child(path, key), j)
        req = d.mapping(item, p, _REQUIREMENT_FIELDS)
        rkey, op = d.string(req, "key", p), d.string(req, "operator", p)
        values = d.string_list(req, "values", p)
        if key == "matchFields":
            _field_requirement(rkey, op, values, p, errs)
            continue
        if op not in _OPERATORS:
            errs.append(unsupported(d.child(p, "operator"), op, _OPERATORS))
            continue
        errs.extend(
            ConfigError(d.child(p, "key"), f"invalid value {d.quote(rkey)}: {m}")
            for m in qualified_name_problems(rkey)
        )
        vp = d.child(p, "values")
        if op in ("In", "NotIn") and not values:
            errs.append(ConfigError(vp, "for 'in', 'notin' operators, values set can't be empty"))
        elif op in ("Exists", "DoesNotExist") and values:
            errs.append(ConfigError(vp, "values set must be empty for exists and does not exist"))
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                errs.append(ConfigError(vp, "for 'Gt', 'Lt' operators, exactly one value is required"))
            elif parse_go_int64(values[0]) is None:
                errs.append(
                    invalid(
                        d.index(vp, 0), values[0], "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
        for k, value in enumerate(values):
            errs.extend(invalid(d.index(vp, k), value, m) for m in label_value_problems(value))


def _field_requirement(key: str, op: str, values: tuple[str, ...], path: str, errs: Errors) -> None:
    if key != "metadata.name":
        errs.append(invalid(d.child(path, "key"), key, "must be 'metadata.name'"))
    elif len(values) != 1:
        errs.append(invalid(d.child(path, "values"), list(values), "must have one element"))
    elif op not in ("In", "NotIn"):
        errs.append(unsupported(d.child(path, "operator"), op, ("In", "NotIn")))


def _term(raw: Any, path: str, errs: Errors, term_path: str | None = None) -> None:
    term = d.mapping(raw, term_path or path, ("matchExpressions", "matchFields"))
    _requirements(term, "matchExpressions", path, errs)
    _requirements(term, "matchFields", path, errs)


def validate_node_affinity(raw: Mapping[str, Any], path: str, errs: Errors) -> None:
    """Upstream ``ValidateNodeAffinityArgs`` (``nodeaffinity.NewNodeSelector`` and
    ``NewPreferredSchedulingTerms`` with a path). ``path`` is ``...args.addedAffinity``."""
    aff = d.mapping(
        raw,
        path,
        ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"),
    )
    required = aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rp = d.child(path, "requiredDuringSchedulingIgnoredDuringExecution")
        sel = d.mapping(required, rp, ("nodeSelectorTerms",))
        for i, term in enumerate(d.seq(sel, "nodeSelectorTerms", rp)):
            _term(term, d.index(d.child(rp, "nodeSelectorTerms"), i), errs)
    pp = d.child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, item in enumerate(d.seq(aff, "preferredDuringSchedulingIgnoredDuringExecution", path)):
        ip = d.index(pp, i)
        pref = d.mapping(item, ip, ("weight", "preference"))
        weight = d.integer(pref, "weight", ip, 0)
        preference = pref.get("preference") or {}
        if weight == 0 or not _non_empty_term(preference):
            continue  # upstream skips (and never validates) zero-weight or empty terms
        # Upstream reports these under the term's index without ".preference".
        _term(preference, ip, errs, term_path=d.child(ip, "preference"))


def _non_empty_term(term: Any) -> bool:
    return isinstance(term, Mapping) and bool(term.get("matchExpressions") or term.get("matchFields"))


def _node_affinity(raw: Mapping[str, Any], path: str, errs: Errors) -> NodeAffinityArgs:
    d.mapping(raw, path, (*_TYPE_META, "addedAffinity"))
    added = raw.get("addedAffinity")
    if added is None:
        return NodeAffinityArgs()
    validate_node_affinity(added, d.child(path, "addedAffinity"), errs)
    return NodeAffinityArgs(added_affinity=dict(added))


# --- InterPodAffinity, DefaultPreemption, VolumeBinding --------------------------------------


def _inter_pod_affinity(raw: Mapping[str, Any], path: str, errs: Errors) -> InterPodAffinityArgs:
    d.mapping(raw, path, (*_TYPE_META, "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"))
    weight = d.integer(raw, "hardPodAffinityWeight", path, 1)
    if not 0 <= weight <= 100:
        errs.append(invalid(d.child(path, "hardPodAffinityWeight"), weight, "not in valid range [0, 100]"))
    ignore = d.boolean(raw, "ignorePreferredTermsOfExistingPods", path, False)
    return InterPodAffinityArgs(
        hard_pod_affinity_weight=weight, ignore_preferred_terms_of_existing_pods=ignore
    )


def _default_preemption(raw: Mapping[str, Any], path: str, errs: Errors) -> DefaultPreemptionArgs:
    d.mapping(raw, path, (*_TYPE_META, "minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
    pct = d.integer(raw, "minCandidateNodesPercentage", path, 10)
    absolute = d.integer(raw, "minCandidateNodesAbsolute", path, 100)
    pct_path, abs_path = (
        d.child(path, "minCandidateNodesPercentage"),
        d.child(path, "minCandidateNodesAbsolute"),
    )
    if not 0 <= pct <= 100:
        errs.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errs.append(
            invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage")
        )
    return DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute)


def _volume_binding(raw: Mapping[str, Any], path: str, errs: Errors) -> VolumeBindingArgs:
    d.mapping(raw, path, (*_TYPE_META, "bindTimeoutSeconds", "shape"))
    timeout = d.integer(raw, "bindTimeoutSeconds", path, 600, bits=64)
    if timeout < 0:
        errs.append(
            invalid(
                d.child(path, "bindTimeoutSeconds"),
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    shape = _shape(raw.get("shape"), d.child(path, "shape"))
    if raw.get("shape") is not None:
        errs.append(
            ConfigError(
                d.child(path, "shape"),
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            )
        )
    return VolumeBindingArgs(bind_timeout_seconds=timeout, shape=shape)


# --- PodTopologySpread ------------------------------------------------------------------------

_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)
_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")


def _pod_topology_spread(raw: Mapping[str, Any], path: str, errs: Errors) -> PodTopologySpreadArgs:
    d.mapping(raw, path, (*_TYPE_META, "defaultConstraints", "defaultingType"))
    defaulting = d.string(raw, "defaultingType", path, "") or "System"
    cp = d.child(path, "defaultConstraints")
    constraints = [
        d.mapping(c, d.index(cp, i), _CONSTRAINT_FIELDS)
        for i, c in enumerate(d.seq(raw, "defaultConstraints", path))
    ]
    tp = d.child(path, "defaultingType")
    if defaulting not in ("System", "List"):
        errs.append(unsupported(tp, defaulting, ("System", "List")))
    elif defaulting == "System" and constraints:
        errs.append(invalid(tp, defaulting, "when .defaultConstraints are not empty"))
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        p = d.index(cp, i)
        max_skew = d.integer(c, "maxSkew", p, 0)
        if max_skew <= 0:
            errs.append(invalid(d.child(p, "maxSkew"), max_skew, "not in valid range (0, inf)"))
        key = d.string(c, "topologyKey", p)
        if not key:
            errs.append(ConfigError(d.child(p, "topologyKey"), "required: can not be empty"))
        else:
            errs.extend(invalid(d.child(p, "topologyKey"), key, m) for m in qualified_name_problems(key))
        action = d.string(c, "whenUnsatisfiable", p)
        if not action:
            errs.append(ConfigError(d.child(p, "whenUnsatisfiable"), "required: can not be empty"))
        elif action not in _ACTIONS:
            errs.append(unsupported(d.child(p, "whenUnsatisfiable"), action, _ACTIONS))
        if c.get("labelSelector") is not None:
            errs.append(
                ConfigError(
                    d.child(p, "labelSelector"),
                    "forbidden: constraint must not define a selector, as they deduced for each pod",
                )
            )
        if (key, action) in seen:
            errs.append(ConfigError(p, f"duplicate value {d.quote(f'{{{key}, {action}}}')}"))
        seen.add((key, action))
    return PodTopologySpreadArgs(
        default_constraints=tuple(dict(c) for c in constraints), defaulting_type=defaulting
    )


_DECODERS: Mapping[str, Callable[[Mapping[str, Any], str, Errors], object]] = {
    n.NODE_RESOURCES_FIT: _fit,
    n.NODE_RESOURCES_BALANCED_ALLOCATION: _balanced,
    n.NODE_AFFINITY: _node_affinity,
    n.INTER_POD_AFFINITY: _inter_pod_affinity,
    n.POD_TOPOLOGY_SPREAD: _pod_topology_spread,
    n.DEFAULT_PREEMPTION: _default_preemption,
    n.VOLUME_BINDING: _volume_binding,
    n.DYNAMIC_RESOURCES: dynamic_resources,
}
