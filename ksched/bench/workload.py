"""Workload files: what ``ksched bench`` creates, in which order, and what it measures.

A workload is a YAML file (format in ``benches/README.md``) with four parts, in upstream
scheduler_perf's terms: ``nodes`` (createNodes), ``initPods`` (createPods before measuring, either
bound directly or scheduled by the scheduler and waited for), ``measuredPods`` (createPods with
collectMetrics: only these are measured) and ``churn`` (objects created, or created and deleted again,
at a fixed interval while the measured pods are scheduled). Each file names its upstream counterpart
and the threshold upstream records for it, so a report can put the two side by side.

Sizes scale: ``--nodes N`` scales every node group (and the initial pods with them, keeping density)
so that the groups total N; ``--pods N`` scales the measured groups to total N. Templates are either
``template`` (short form: the arguments of :func:`ksched.sim.workloads.node_template` /
:func:`~ksched.sim.workloads.pod_template`) or ``manifest`` (a whole Node or Pod).

Everything is checked when the file is loaded; errors name the file and the field path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ksched.bench.errors import WorkloadError
from ksched.bounded import OBJECT_LIMIT, LimitError, load_yaml, read_bytes
from ksched.sim.workloads import node_template, pod_template

Obj = dict[str, Any]

WORKLOAD_DIR = Path(__file__).resolve().parents[2] / "benches" / "workloads"
"""Where named workloads live in a source checkout."""

_NODE_KEYS = {"cpu", "memory", "pods", "labels", "taints", "extended"}
_POD_KEYS = {
    "cpu",
    "memory",
    "labels",
    "extended",
    "nodeSelector",
    "tolerations",
    "affinity",
    "topologySpreadConstraints",
    "priority",
    "schedulerName",
}
_POD_ARG = {"nodeSelector": "node_selector", "topologySpreadConstraints": "topology_spread"}
STORAGE_PATHS = {
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/namespaces/{namespace}/csistoragecapacities",
    "PersistentVolume": "/api/v1/persistentvolumes",
}
"""Kinds a workload's ``storage`` list may create, and where."""
QUALITY_FIGURES = ("nodes_used", "max_pods_per_node", "max_skew", "unscheduled", "preempted", "colocated")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGroup:
    count: int
    manifest: Obj
    zones: int = 0
    """Round-robin ``topology.kubernetes.io/zone`` values ``zone-0..zone-{zones-1}`` (0: none)."""
    label_values: dict[str, list[str]] = field(default_factory=dict)
    """Label key -> values dealt round-robin over the group's nodes (upstream's labelNodePrepareStrategy)."""
    csi_node: Obj | None = None
    """A CSINode per node (upstream's nodeAllocatableStrategy): ``{"drivers": {name: count},
    "migratedPlugins": [...]}``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PodGroup:
    count: int
    manifest: Obj
    namespace: str
    bound: bool = False
    """Init pods only: created with spec.nodeName (round-robin over the nodes), no scheduling."""
    rate: float = 0.0
    """Measured pods only: pods per second; 0 creates them all at once."""
    skip_wait: bool = False
    """Init pods only, not bound (upstream's ``skipWaitToCompletion``): the measurement starts
    once the scheduler has tried each of them, bound or not, e.g. pods that fit nowhere and stay
    parked in the queue while the measured pods are scheduled."""
    claim: Obj | None = None
    """A PersistentVolumeClaim per pod (``persistentVolumeClaim``), mounted as volume ``vol``."""
    volume: Obj | None = None
    """A PersistentVolume per pod bound to its claim (``persistentVolume``), as scheduler_perf's
    persistentVolumeTemplatePath creates them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Churn:
    kind: str
    """``pod`` or ``node``."""
    manifest: Obj
    interval_s: float
    mode: str = "create"
    """``create`` keeps creating; ``recreate`` deletes the previous object before creating the next."""
    namespace: str = "churn"


@dataclass(frozen=True, slots=True, kw_only=True)
class Quality:
    figures: tuple[str, ...] = ("nodes_used", "max_pods_per_node")
    skew_key: str = "topology.kubernetes.io/zone"
    """Topology key of ``max_skew`` (measured over the measured pods)."""
    colocate_key: str = "kubernetes.io/hostname"
    """Topology key of ``colocated``: measured pods sharing a domain with another measured pod."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    name: str
    upstream: str
    upstream_threshold: float | None
    upstream_source: str
    description: str
    nodes: tuple[NodeGroup, ...]
    init_pods: tuple[PodGroup, ...]
    measured_pods: tuple[PodGroup, ...]
    churn: tuple[Churn, ...] = ()
    quality: Quality = Quality()
    timeout_s: float = 600.0
    """Give up measuring after this long (the report says how many pods were left)."""
    expect_unschedulable: int = 0
    """Measured pods that cannot be placed by design; the run ends when the rest are bound."""
    storage: tuple[Obj, ...] = ()
    """StorageClasses, CSIDrivers, CSIStorageCapacities, ...: created before the nodes."""
    source: str = ""

    @property
    def node_count(self) -> int:
        return sum(g.count for g in self.nodes)

    @property
    def provisions(self) -> bool:
        """Some claim has no volume made for it: the cluster's PV controller and provisioner must run."""
        return any(g.claim is not None and g.volume is None for g in (*self.init_pods, *self.measured_pods))

    @property
    def measured_count(self) -> int:
        return sum(g.count for g in self.measured_pods)

    def scaled(self, *, nodes: int | None = None, pods: int | None = None) -> Workload:
        """The same shape with ``nodes`` nodes in total and ``pods`` measured pods in total.

        Changing the node count alone scales the initial and measured pods with it (the cluster keeps
        its density, so e.g. anti-affinity pods still fit); ``pods`` then overrides the measured total.
        """
        out = self
        if nodes is not None and nodes != self.node_count:
            f = nodes / max(self.node_count, 1)
            out = replace(
                out,
                nodes=_split(self.nodes, nodes),
                init_pods=tuple(replace(g, count=math.ceil(g.count * f)) for g in self.init_pods),
                measured_pods=_split(self.measured_pods, max(1, math.ceil(self.measured_count * f))),
                expect_unschedulable=math.ceil(self.expect_unschedulable * f),
            )
        if pods is not None and pods != out.measured_count:
            f = pods / max(out.measured_count, 1)
            out = replace(
                out,
                measured_pods=_split(out.measured_pods, pods),
                expect_unschedulable=min(pods, math.ceil(out.expect_unschedulable * f)),
            )
        return out


def _split(groups: tuple[Any, ...], total: int) -> tuple[Any, ...]:
    """Counts proportional to the groups' counts, summing to ``total`` exactly."""
    weights = [g.count for g in groups]
    whole = sum(weights) or 1
    counts = [total * w // whole for w in weights]
    for i in range(total - sum(counts)):
        counts[i % len(counts)] += 1
    return tuple(replace(g, count=c) for g, c in zip(groups, counts, strict=True))


# ---------------------------------------------------------------------------------------------- loading
def resolve_path(name_or_path: str) -> Path:
    """A path as given, or the name of a file in ``benches/workloads`` (with or without ``.yaml``)."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return WORKLOAD_DIR / f"{name_or_path}.yaml"


def available() -> list[str]:
    """Names of the workloads shipped in ``benches/workloads``."""
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.yaml"))


def load(name_or_path: str) -> Workload:
    path = resolve_path(name_or_path)
    try:
        doc = load_yaml(read_bytes(path, OBJECT_LIMIT, "a workload").decode("utf-8"), str(path))
    except FileNotFoundError as exc:
        known = ", ".join(available())
        raise WorkloadError(str(path), "", f"no such workload file (shipped: {known})") from exc
    except LimitError as exc:
        raise WorkloadError(str(path), "", str(exc).removeprefix(f"{path}: ")) from None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise WorkloadError(str(path), "", f"cannot read it: {exc}") from exc
    return parse(doc, str(path))


def parse(doc: Any, source: str = "<workload>") -> Workload:
    p = _Parser(source)
    d = p.mapping(doc, "")
    p.known(
        d,
        "",
        {
            "name",
            "upstream",
            "upstreamThreshold",
            "upstreamSource",
            "description",
            "nodes",
            "initPods",
            "measuredPods",
            "churn",
            "quality",
            "timeoutSeconds",
            "expectUnschedulable",
            "storage",
        },
    )
    nodes = tuple(p.node_group(g, f"nodes[{i}]") for i, g in enumerate(p.seq(d.get("nodes"), "nodes")))
    if not nodes:
        raise WorkloadError(source, "nodes", "at least one node group is required")
    init = tuple(
        p.pod_group(g, f"initPods[{i}]", init=True)
        for i, g in enumerate(p.seq(d.get("initPods", []), "initPods"))
    )
    measured = tuple(
        p.pod_group(g, f"measuredPods[{i}]", init=False)
        for i, g in enumerate(p.seq(d.get("measuredPods"), "measuredPods"))
    )
    if not measured:
        raise WorkloadError(source, "measuredPods", "at least one group of measured pods is required")
    churn = tuple(p.churn(c, f"churn[{i}]") for i, c in enumerate(p.seq(d.get("churn", []), "churn")))
    threshold = d.get("upstreamThreshold")
    if threshold is not None and not isinstance(threshold, int | float):
        raise WorkloadError(source, "upstreamThreshold", f"must be a number or null, got {threshold!r}")
    return Workload(
        name=p.string(d.get("name"), "name"),
        upstream=str(d.get("upstream", "")),
        upstream_threshold=float(threshold) if threshold is not None else None,
        upstream_source=str(d.get("upstreamSource", "")),
        description=str(d.get("description", "")).strip(),
        nodes=nodes,
        init_pods=init,
        measured_pods=measured,
        churn=churn,
        quality=p.quality(d.get("quality", {}), "quality"),
        timeout_s=p.number(d.get("timeoutSeconds", 600), "timeoutSeconds", minimum=1),
        expect_unschedulable=int(p.number(d.get("expectUnschedulable", 0), "expectUnschedulable")),
        storage=tuple(
            p.storage_object(o, f"storage[{i}]") for i, o in enumerate(p.seq(d.get("storage", []), "storage"))
        ),
        source=source,
    )


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> WorkloadError:
        return WorkloadError(self.source, path, problem)

    def mapping(self, v: Any, path: str) -> Obj:
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {type(v).__name__}")
        return v

    def seq(self, v: Any, path: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        return v

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(path, f"expected a non-empty string, got {v!r}")
        return v

    def number(self, v: Any, path: str, *, minimum: float = 0) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or v < minimum:
            raise self.fail(path, f"expected a number >= {minimum}, got {v!r}")
        return float(v)

    def known(self, d: Obj, path: str, keys: set[str]) -> None:
        extra = sorted(set(d) - keys)
        if extra:
            where = f"{path}." if path else ""
            raise self.fail(f"{where}{extra[0]}", f"unknown field (known: {', '.join(sorted(keys))})")

    def count(self, d: Obj, path: str) -> int:
        v = d.get("count")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(f"{path}.count", f"expected an integer >= 0, got {v!r}")
        return v

    def manifest(self, d: Obj, path: str, kind: str) -> Obj:
        if "manifest" in d and "template" in d:
            raise self.fail(path, "give either template or manifest, not both")
        if "manifest" in d:
            m = self.mapping(d["manifest"], f"{path}.manifest")
            if m.get("kind", kind) != kind:
                raise self.fail(f"{path}.manifest.kind", f"expected {kind}, got {m.get('kind')!r}")
            return m
        t = self.mapping(d.get("template", {}), f"{path}.template")
        if kind == "Node":
            self.known(t, f"{path}.template", _NODE_KEYS)
            return node_template(**{k: str(v) if k in ("cpu", "memory", "pods") else v for k, v in t.items()})
        self.known(t, f"{path}.template", _POD_KEYS)
        args = {_POD_ARG.get(k, k): v for k, v in t.items()}
        for k in ("cpu", "memory"):
            if k in args and args[k] is not None:
                args[k] = str(args[k])
        return pod_template(**args)

    def node_group(self, v: Any, path: str) -> NodeGroup:
        d = self.mapping(v, path)
        self.known(d, path, {"count", "template", "manifest", "zones", "labelValues", "csiNode"})
        lv = self.mapping(d.get("labelValues", {}), f"{path}.labelValues")
        for k, vals in lv.items():
            if not self.seq(vals, f"{path}.labelValues.{k}"):
                raise self.fail(f"{path}.labelValues.{k}", "needs at least one value")
        return NodeGroup(
            count=self.count(d, path),
            manifest=self.manifest(d, path, "Node"),
            zones=int(self.number(d.get("zones", 0), f"{path}.zones")),
            label_values={str(k): [str(x) for x in vals] for k, vals in lv.items()},
            csi_node=self.csi_node(d["csiNode"], f"{path}.csiNode") if "csiNode" in d else None,
        )

    def csi_node(self, v: Any, path: str) -> Obj:
        d = self.mapping(v, path)
        self.known(d, path, {"drivers", "migratedPlugins"})
        drivers = self.mapping(d.get("drivers", {}), f"{path}.drivers")
        for name, count in drivers.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise self.fail(f"{path}.drivers.{name}", f"expected an attach limit >= 0, got {count!r}")
        plugins = [str(x) for x in self.seq(d.get("migratedPlugins", []), f"{path}.migratedPlugins")]
        return {"drivers": dict(drivers), "migratedPlugins": plugins}

    def storage_object(self, v: Any, path: str) -> Obj:
        d = self.mapping(v, path)
        if d.get("kind") not in STORAGE_PATHS:
            raise self.fail(
                f"{path}.kind", f"expected one of {', '.join(STORAGE_PATHS)}, got {d.get('kind')!r}"
            )
        return d

    def pod_group(self, v: Any, path: str, *, init: bool) -> PodGroup:
        d = self.mapping(v, path)
        allowed = {"count", "template", "manifest", "namespace", "persistentVolumeClaim", "persistentVolume"}
        allowed |= {"bound", "skipWaitToCompletion"} if init else {"rate"}
        self.known(d, path, allowed)
        bound = d.get("bound", False)
        if not isinstance(bound, bool):
            raise self.fail(f"{path}.bound", f"expected true or false, got {bound!r}")
        skip_wait = d.get("skipWaitToCompletion", False)
        if not isinstance(skip_wait, bool) or (skip_wait and bound):
            raise self.fail(
                f"{path}.skipWaitToCompletion",
                f"expected true or false for pods not bound, got {skip_wait!r}",
            )
        return PodGroup(
            count=self.count(d, path),
            manifest=self.manifest(d, path, "Pod"),
            namespace=str(d.get("namespace", "sched-setup" if init else "sched-test")),
            bound=bound,
            skip_wait=skip_wait,
            rate=self.number(d.get("rate", 0), f"{path}.rate"),
            claim=self.kind_of(d, "persistentVolumeClaim", "PersistentVolumeClaim", path),
            volume=self.kind_of(d, "persistentVolume", "PersistentVolume", path),
        )

    def kind_of(self, d: Obj, key: str, kind: str, path: str) -> Obj | None:
        if key not in d:
            return None
        m = self.mapping(d[key], f"{path}.{key}")
        if m.get("kind", kind) != kind:
            raise self.fail(f"{path}.{key}.kind", f"expected {kind}, got {m.get('kind')!r}")
        return m

    def churn(self, v: Any, path: str) -> Churn:
        d = self.mapping(v, path)
        self.known(d, path, {"kind", "template", "manifest", "intervalSeconds", "mode", "namespace"})
        kind = d.get("kind")
        if kind not in ("pod", "node"):
            raise self.fail(f"{path}.kind", f"expected pod or node, got {kind!r}")
        mode = d.get("mode", "create")
        if mode not in ("create", "recreate"):
            raise self.fail(f"{path}.mode", f"expected create or recreate, got {mode!r}")
        return Churn(
            kind=kind,
            manifest=self.manifest(d, path, "Pod" if kind == "pod" else "Node"),
            interval_s=self.number(d.get("intervalSeconds", 1), f"{path}.intervalSeconds", minimum=0.01),
            mode=mode,
            namespace=str(d.get("namespace", "churn")),
        )

    def quality(self, v: Any, path: str) -> Quality:
        d = self.mapping(v, path)
        self.known(d, path, {"figures", "skewKey", "colocateKey"})
        figures = tuple(
            str(f) for f in self.seq(d.get("figures", list(Quality().figures)), f"{path}.figures")
        )
        for i, f in enumerate(figures):
            if f not in QUALITY_FIGURES:
                raise self.fail(
                    f"{path}.figures[{i}]", f"unknown figure {f!r} (known: {', '.join(QUALITY_FIGURES)})"
                )
        return Quality(
            figures=figures,
            skew_key=str(d.get("skewKey", Quality().skew_key)),
            colocate_key=str(d.get("colocateKey", Quality().colocate_key)),
        )
