"""``ksched explain``: what every plugin thought of every node, for one pod.

It runs the very cycle the scheduler runs (same profile, same plugins, same arrays) on a cluster
read from a file, with ``explain=True`` so every score is kept, and reports per node either the
first plugin that rejected it with upstream's reason strings, or each plugin's normalized and
weighted score. The JSON shape is a contract other tools drive; keep it stable:

``pod``, ``profile``, ``selectedNode`` (null when nothing fits), ``feasibleNodes``, ``message``
(upstream's ``0/N nodes are available: ...`` when nothing fits, with its ``preemption: ...`` part,
else absent), ``preemption`` when nothing fits and the profile preempts (``{"node", "victims"}``:
the node preemption would nominate and the ``namespace/name`` of the pods it would evict there;
node null and no victims when it cannot help), and ``nodes`` in
input order: ``{"name", "feasible"}`` plus ``plugin`` / ``reasons`` (and ``detail`` when the plugin
can say more) for rejected nodes, ``scores`` / ``weightedScores`` / ``totalScore`` for feasible ones.

With ``extenders`` in the configuration, explain calls them as the scheduler does: a node an
extender filtered out is rejected by plugin ``Extender`` with the extender's message, and each
prioritizer's scores appear as ``Extender <urlPrefix>`` (raw 0..10 score; weighted: score x weight
x 10, upstream's scaling). An extender's error is the cycle's error. Binders are not called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksched.bounded import OBJECT_LIMIT, preview
from ksched.cache.cluster import ClusterCache
from ksched.config.extenders import with_ignored_resources
from ksched.config.names import SCHEDULING_GATES
from ksched.errors import InputError, ManifestError, ObjectError
from ksched.framework.extender import EXTENDER_NAME
from ksched.framework.handle import HandleServices
from ksched.framework.interface import Code, detail_for
from ksched.framework.loader import load_with_plugins
from ksched.framework.messages import fit_error_message
from ksched.framework.profile import build_profiles
from ksched.framework.runtime import CycleResult, Framework
from ksched.kube.io_thread import IOThread
from ksched.manifests import gc_paused, kind_of, read_manifests
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import DECODERS as STORAGE_DECODERS
from ksched.model.workloads import DECODERS as WORKLOAD_DECODERS
from ksched.scheduler.extenders import build_extenders


@dataclass(slots=True)
class LoadedCluster:
    cache: ClusterCache
    node_order: list[str]
    """Node names in the order the file lists them (explain reports in this order)."""


def load_cluster(path: str | os.PathLike[str]) -> LoadedCluster:
    """Nodes, namespaces, bound pods, budgets, spreading selectors' owners and storage objects from a
    cluster file; pods without ``spec.nodeName`` are ignored."""
    with gc_paused():
        return _load_cluster(path)


def _load_cluster(path: str | os.PathLike[str]) -> LoadedCluster:
    objects = read_manifests(path)
    cache = ClusterCache(node_capacity=max(64, sum(1 for o in objects if kind_of(o) == "Node")))
    order: list[str] = []
    seen: set[str] = set()
    pods: list[Pod] = []
    for i, obj in enumerate(objects):
        kind = kind_of(obj)
        try:
            if kind == "Node":
                node = node_from_dict(obj)
                cache.add_node(node)
                if node.name not in seen:
                    seen.add(node.name)
                    order.append(node.name)
            elif kind == "Namespace":
                cache.set_namespace(namespace_from_dict(obj))
            elif kind == "PodDisruptionBudget":  # preemption honours them
                budget = pdb_from_dict(obj)
                cache.pdbs[budget.key] = budget
            elif kind in STORAGE_DECODERS:  # the volume plugins' PVs, claims, classes, CSI objects
                resource, decode = STORAGE_DECODERS[kind]
                cache.volumes.upsert(resource, decode(obj))
            elif kind in WORKLOAD_DECODERS:  # default topology spreading selectors
                cache.selector_owners.upsert(WORKLOAD_DECODERS[kind](obj))
            elif kind == "Pod":
                spec = obj.get("spec")
                if isinstance(spec, dict) and spec.get("nodeName"):
                    pods.append(pod_from_dict(obj))
        except ObjectError as exc:
            raise ManifestError(f"{path}: object {i + 1}: {exc}") from exc
    for pod in pods:
        cache.add_pod(pod)
    return LoadedCluster(cache, order)


def load_pod(path: str | os.PathLike[str]) -> Pod:
    """The single Pod in ``path``."""
    objects = read_manifests(path, OBJECT_LIMIT, "a pod file")
    if len(objects) != 1:
        raise ManifestError(f"{path}: expected exactly one Pod, found {len(objects)} objects")
    obj = objects[0]
    kind = kind_of(obj)
    if kind != "Pod":
        raise ManifestError(f"{path}: expected a Pod, got kind {preview(kind or '<missing>')}")
    try:
        return pod_from_dict(obj)
    except ObjectError as exc:
        raise ManifestError(f"{path}: {exc}") from exc


def _score_at(scores: Any, row: int) -> int:
    return int(scores[row]) if isinstance(scores, np.ndarray) else int(scores)


def _node_entries(result: CycleResult, fw: Framework, cluster: LoadedCluster) -> list[dict[str, Any]]:
    nodes = cluster.cache.nodes
    feasible = result.feasible
    entries: list[dict[str, Any]] = []
    failed_all = result.status.code == Code.ERROR
    for name in cluster.node_order:
        row = nodes.row_of[name]
        entry: dict[str, Any] = {"name": name}
        if failed_all:
            entry.update(feasible=False, plugin=result.status.plugin, reasons=list(result.status.reasons))
        elif feasible is not None and feasible[row]:
            entry["feasible"] = True
            scores = {ps.plugin: _score_at(ps.scores, row) for ps in result.scores}
            weighted = {ps.plugin: _score_at(ps.scores, row) * ps.weight for ps in result.scores}
            entry.update(scores=scores, weightedScores=weighted, totalScore=sum(weighted.values()))
        else:
            failure = result.first_failure(row)
            if failure is None and any(p == EXTENDER_NAME for p, _ in result.filters):
                entry.update(feasible=False, plugin=EXTENDER_NAME, reasons=["filtered out without a reason"])
            elif failure is None:
                # Passed every filter but was left out by percentageOfNodesToScore sampling.
                entry.update(feasible=True, scores=None, weightedScores=None, totalScore=None)
            else:
                plugin, reasons, _code = failure
                entry.update(feasible=False, plugin=plugin, reasons=reasons)
                detail = detail_for(fw.plugins.get(plugin), result.pod, cluster.cache, row)
                if detail:
                    entry["detail"] = detail
        entries.append(entry)
    return entries


def explain(
    cluster: LoadedCluster,
    pod: Pod,
    config_path: str | None = None,
    *,
    seed: int | None = 0,
    plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """Run one explained cycle and return the JSON-ready report; ``plugins`` are out-of-tree plugin
    factories (``module:factory``), as ``ksched run --plugin`` takes them."""
    config, registry = load_with_plugins(config_path or None, plugins)
    config = with_ignored_resources(config)
    if not config.extenders:
        return _explain(cluster, pod, build_profiles(config, registry=registry, seed=seed))
    # The configured extenders are asked as the scheduler asks them, over HTTP from an I/O thread.
    with IOThread(name="ksched-explain-io") as io:
        services = HandleServices(extenders=build_extenders(config.extenders, io))
        return _explain(cluster, pod, build_profiles(config, registry=registry, seed=seed, services=services))


def _explain(cluster: LoadedCluster, pod: Pod, profiles: Mapping[str, Framework]) -> dict[str, Any]:
    fw = profiles.get(pod.scheduler_name)
    if fw is None:
        known = ", ".join(sorted(profiles))
        raise InputError(
            f"{pod.described}: spec.schedulerName {preview(pod.scheduler_name)} matches no profile"
            f" (profiles: {known})"
        )
    gates = fw.plugins.get(SCHEDULING_GATES)
    gate_status = gates.pre_enqueue(pod) if gates is not None else None  # type: ignore[attr-defined]
    if gate_status is not None and not gate_status.ok:
        nodes = [
            {"name": n, "feasible": False, "plugin": SCHEDULING_GATES, "reasons": list(gate_status.reasons)}
            for n in cluster.node_order
        ]
        return {
            "pod": pod.key,
            "profile": fw.profile,
            "selectedNode": None,
            "feasibleNodes": 0,
            "message": gate_status.message,
            "nodes": nodes,
        }
    result = fw.schedule_pod(pod, cluster.cache, explain=True)
    report: dict[str, Any] = {
        "pod": pod.key,
        "profile": fw.profile,
        "selectedNode": result.selected_node,
        "feasibleNodes": 0 if result.status.code == Code.ERROR else result.feasible_count,
    }
    if result.selected_node is None:
        report["message"] = result.message()
        preemption = _preemption(fw, pod, cluster.cache, result)
        if preemption is not None:
            report["message"], report["preemption"] = preemption
    report["nodes"] = _node_entries(result, fw, cluster)
    return report


def _preemption(
    fw: Framework, pod: Pod, cache: ClusterCache, result: CycleResult
) -> tuple[str, dict[str, Any]] | None:
    """What PostFilter (preemption) would do, without doing it: the FailedScheduling message with
    upstream's ``preemption: ...`` part, and ``{"node", "victims"}`` (node null when preemption
    cannot help). The dry run leaves the cache exactly as it was."""
    if result.status.code == Code.ERROR or result.num_all_nodes == 0:
        return None
    pf = fw.run_post_filter(pod, cache, result)
    if pf is None:
        return None
    msg = pf.status.message
    message = fit_error_message(result, msg, pf.status.plugin) if msg else result.message()
    return message, {"node": pf.nominated_node or None, "victims": [v.key for v in pf.victims]}


def render_text(report: dict[str, Any]) -> str:
    """A readable table of the same report."""
    lines = [
        f"pod:       {report['pod']}",
        f"profile:   {report['profile']}",
        f"selected:  {report['selectedNode'] or '-'}",
        f"feasible:  {report['feasibleNodes']}/{len(report['nodes'])} nodes",
    ]
    if "message" in report:
        lines.append(f"message:   {report['message']}")
    pre = report.get("preemption")
    if pre is not None:
        victims = ", ".join(pre["victims"])
        lines.append(f"preempt:   {pre['node']} (evicting {victims})" if pre["node"] else "preempt:   -")
    plugins: list[str] = []
    for entry in report["nodes"]:
        for p in entry.get("scores") or {}:
            if p not in plugins:
                plugins.append(p)
    width = max([4] + [len(e["name"]) for e in report["nodes"]])
    header = f"{'NODE':<{width}}  {'TOTAL':>6}  " + "  ".join(f"{p:>{max(len(p), 5)}}" for p in plugins)
    lines += [
        "",
        header.rstrip() + ("  REJECTED BY" if any(not e["feasible"] for e in report["nodes"]) else ""),
    ]
    best = report["selectedNode"]
    for e in report["nodes"]:
        mark = "*" if e["name"] == best else " "
        if e["feasible"] and e.get("scores") is not None:
            cells = "  ".join(f"{e['weightedScores'].get(p, '-')!s:>{max(len(p), 5)}}" for p in plugins)
            lines.append(f"{e['name']:<{width}}{mark} {e['totalScore']:>6}  {cells}")
        elif e["feasible"]:
            lines.append(f"{e['name']:<{width}}{mark} {'-':>6}  (passed filters; not sampled for scoring)")
        else:
            why = f"{e['plugin']}: {', '.join(e['reasons'])}"
            if e.get("detail"):
                why += f" ({e['detail']})"
            pad = " " * (len(header) - width - 10) if plugins else ""
            lines.append(f"{e['name']:<{width}}  {'-':>6}  {pad}{why}")
    if plugins:
        lines += ["", "scores are weighted (normalized score x weight); * marks the selected node"]
    return "\n".join(lines)
