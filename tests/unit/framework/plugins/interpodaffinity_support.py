"""Builders and runners shared by the ``test_interpodaffinity_*`` modules.

The builders mirror upstream's ``st.MakePod()...PodAffinityIn(key, topologyKey, values, kind)``
helpers (``pkg/scheduler/testing/wrappers.go``) as raw API dicts. Upstream's tests leave the
namespace empty, which the API server (and ksched's parser) reads as ``default``: ``DEFAULT_NS``.

Each table case runs three ways: the plugin alone (PreFilter, then Filter / PreScore, Score,
NormalizeScore, as upstream's test loops do), a :class:`Framework` holding only the plugin, and
``ksched explain`` with the default profile (nodes given room for pods so that no other plugin
rejects them first).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.config.types import InterPodAffinityArgs
from ksched.explain import LoadedCluster, explain
from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.interpodaffinity import InterPodAffinity, new
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import make_node, make_pod

DEFAULT_NS = "default"
REQ, PREF = "required", "preferred"
_names = itertools.count()

# scoring_test.go's ``namespaces``: two teams of two namespaces each.
NAMESPACES: dict[str, dict[str, str]] = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def term(
    *exprs: dict[str, Any],
    topology_key: str,
    namespaces: Sequence[str] | None = None,
    ns_selector: dict[str, Any] | None = None,
    selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A PodAffinityTerm; ``exprs`` become its labelSelector's matchExpressions."""
    t: dict[str, Any] = {
        "labelSelector": selector if selector is not None else {"matchExpressions": list(exprs)}
    }
    t["topologyKey"] = topology_key
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    req_aff: Iterable[dict[str, Any]] = (),
    req_anti: Iterable[dict[str, Any]] = (),
    pref_aff: Iterable[dict[str, Any]] = (),
    pref_anti: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ra, rn, pa, pn = list(req_aff), list(req_anti), list(pref_aff), list(pref_anti)
    if ra or pa:
        out["podAffinity"] = {}
        if ra:
            out["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = ra
        if pa:
            out["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = pa
    if rn or pn:
        out["podAntiAffinity"] = {}
        if rn:
            out["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = rn
        if pn:
            out["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = pn
    return out


def merge(*affinities: Mapping[str, Any]) -> dict[str, Any]:
    """Union of several :func:`affinity` dicts (lists concatenated)."""
    out: dict[str, Any] = {}
    for a in affinities:
        for part, kinds in a.items():
            dst = out.setdefault(part, {})
            for kind, items in kinds.items():
                dst.setdefault(kind, []).extend(items)
    return out


def xpod(
    *,
    labels: Mapping[str, str] | None = None,
    node: str = "",
    ns: str = DEFAULT_NS,
    aff: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """``st.MakePod()``: a uniquely named pod (upstream's test pods mostly have no name)."""
    n = name or f"pod{next(_names)}"
    return make_pod(n, namespace=ns, labels=labels, node_name=node, affinity=dict(aff) if aff else None)


def xnode(name: str, labels: Mapping[str, str], *, roomy: bool = False) -> dict[str, Any]:
    if roomy:
        return make_node(name, labels=labels, cpu="8", memory="16Gi", pods=110)
    return make_node(name, labels=labels)


def build(
    nodes: Sequence[dict[str, Any]],
    pods: Iterable[dict[str, Any]] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> ClusterCache:
    cache = ClusterCache()
    for name, labels in (namespaces or {}).items():
        cache.set_namespace(namespace_from_dict({"metadata": {"name": name, "labels": dict(labels)}}))
    for n in nodes:
        cache.add_node(node_from_dict(n))
    for p in pods:
        record = pod_from_dict(p)
        cache.add_pod(record)
    return cache


def plugin_of(hard: int = 1, ignore: bool = False) -> InterPodAffinity:
    return new(
        InterPodAffinityArgs(hard_pod_affinity_weight=hard, ignore_preferred_terms_of_existing_pods=ignore),
        Handle("default-scheduler"),
    )


def statuses(plugin: InterPodAffinity, incoming: Pod, cache: ClusterCache, names: Sequence[str]) -> Any:
    """Upstream's filter loop: the PreFilter status (code, reasons), then per node (code, reasons) or None."""
    state = CycleState()
    _, pre = plugin.pre_filter(state, incoming, cache)
    if pre.code != Code.SUCCESS:
        return (pre.code, pre.reasons), None
    fr = plugin.filter(state, incoming, cache)
    per_node = []
    for name in names:
        reasons, code = fr.reasons_at(cache.nodes.row_of[name])
        per_node.append(None if not reasons else (code, tuple(reasons)))
    return None, per_node


def framework_statuses(
    plugin: InterPodAffinity, incoming: Pod, cache: ClusterCache, names: Sequence[str]
) -> Any:
    """The same through :class:`Framework` (PreFilter rejection, or each node's first failure)."""
    fw = Framework("default-scheduler", pre_filter=[plugin], filters=[plugin], rng=np.random.default_rng(0))
    result = fw.schedule_pod(incoming, cache, explain=True)
    if result.prefilter_rejection is not None:
        s = result.prefilter_rejection
        return (s.code, s.reasons), None
    per_node = []
    for name in names:
        failure = result.first_failure(cache.nodes.row_of[name])
        per_node.append(None if failure is None else (failure[2], tuple(failure[1])))
    return None, per_node


def explain_reasons(incoming: Pod, cache: ClusterCache, names: Sequence[str]) -> list[tuple[str, ...] | None]:
    """``ksched explain`` with the default profile: each node's (plugin, *reasons) or None if feasible."""
    report = explain(LoadedCluster(cache, list(names)), incoming)
    out: list[tuple[str, ...] | None] = []
    for entry in report["nodes"]:
        out.append(None if entry["feasible"] else (entry["plugin"], *entry["reasons"]))
    return out


def scores(plugin: InterPodAffinity, incoming: Pod, cache: ClusterCache, names: Sequence[str]) -> Any:
    """Upstream's score loop: PreScore status code, then normalized scores by node (None if not SUCCESS)."""
    state = CycleState()
    feasible = cache.nodes.valid[: cache.nodes.n_rows].copy()
    status = plugin.pre_score(state, incoming, cache, feasible)
    if status.code != Code.SUCCESS:
        return status, None
    raw = plugin.score(state, incoming, cache, feasible)
    norm = plugin.normalize_score(state, incoming, raw, feasible)
    arr = np.broadcast_to(np.asarray(norm), (cache.nodes.n_rows,))
    return status, [int(arr[cache.nodes.row_of[n]]) for n in names]
