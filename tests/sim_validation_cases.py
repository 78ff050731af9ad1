"""Invalid-object cases for the embedded cluster's ObjectMeta, Pod and Node validation, as data.

Each case is (kind, fragment, field, reason): ``fragment`` is merged into the kind's valid base
object (:func:`build`; a ``None`` value removes the key), and kube-apiserver v1.35 refuses the result
with a 422 whose causes include ``field`` with ``reason``. Most are ported from upstream's
``validation_test.go`` tables. ``python -m tests.sim_validation_cases`` writes them out as the
corpus file ``tests/corpus/invalid_objects_core.yaml`` ({kind, object, field} entries).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
Case = tuple[str, Obj, str, str]

IMAGE = "registry.k8s.io/pause:3.10"
INV, REQ, DUP, NSUP, FORB, LONG = (
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueDuplicate",
    "FieldValueNotSupported",
    "FieldValueForbidden",
    "FieldValueTooLong",
)

BASES: dict[str, Obj] = {
    "Pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": IMAGE}]},
    },
    "Node": {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    },
    "ConfigMap": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"},
    },
    "Namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
    "ServiceAccount": {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "sa", "namespace": "default"},
    },
    "ClusterRole": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
    },
    "Lease": {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "default"},
    },
}
RESOURCE = {
    "Pod": "pods",
    "Node": "nodes",
    "ConfigMap": "configmaps",
    "Namespace": "namespaces",
    "ServiceAccount": "serviceaccounts",
    "ClusterRole": "clusterroles.rbac.authorization.k8s.io",
    "Lease": "leases.coordination.k8s.io",
}


def merge(base: Obj, fragment: Obj) -> Obj:
    """``fragment`` merged into a copy of ``base``: dicts merge, anything else replaces, None removes."""
    out = copy.deepcopy(base)
    for key, value in fragment.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def build(kind: str, fragment: Obj) -> Obj:
    return merge(BASES[kind], fragment)


def _meta(**kw: Any) -> Obj:
    return {"metadata": kw}


def _ref(**kw: Any) -> Obj:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": "u-1"}
    ref.update(kw)
    return {k: v for k, v in ref.items() if v is not None}


def _ctr(**kw: Any) -> Obj:
    ctr: Obj = {"name": "c", "image": IMAGE}
    ctr.update(kw)
    return {k: v for k, v in ctr.items() if v is not None}


def _spec(**kw: Any) -> Obj:
    return {"spec": kw}


def _res(requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    out: Obj = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return _spec(containers=[_ctr(resources=out)])


META_CASES: list[Case] = [
    ("Pod", _meta(name="Tw"), "metadata.name", INV),
    ("Pod", _meta(name="a_b"), "metadata.name", INV),
    ("Pod", _meta(name="a" * 254), "metadata.name", INV),
    ("Pod", _meta(name=None, generateName="Bad-"), "metadata.generateName", INV),
    ("ConfigMap", _meta(name="-cm"), "metadata.name", INV),
    ("ServiceAccount", _meta(name="sa."), "metadata.name", INV),
    ("Lease", _meta(name="UPPER"), "metadata.name", INV),
    ("Namespace", _meta(name="a.b"), "metadata.name", INV),
    ("ClusterRole", _meta(name="a/b"), "metadata.name", INV),
    ("ClusterRole", _meta(name=".."), "metadata.name", INV),
    ("ClusterRole", _meta(name="50%"), "metadata.name", INV),
    ("ConfigMap", _meta(namespace="Bad_NS"), "metadata.namespace", INV),
    ("Pod", _meta(labels={"a\x00b": "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"a\x1b[31m": "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"a/b/c": "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"Example.com/x": "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"k" * 64: "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"/k": "v"}), "metadata.labels", INV),
    ("Pod", _meta(labels={"k": "v" * 64}), "metadata.labels", INV),
    ("Pod", _meta(labels={"k": "-v"}), "metadata.labels", INV),
    ("Node", _meta(labels={"k": "a b"}), "metadata.labels", INV),
    ("ConfigMap", _meta(annotations={"bad key": "v"}), "metadata.annotations", INV),
    ("ConfigMap", _meta(annotations={"k": "x" * (256 * 1024)}), "metadata.annotations", LONG),
    ("Pod", _meta(ownerReferences=[_ref(uid=None)]), "metadata.ownerReferences.uid", INV),
    ("Pod", _meta(ownerReferences=[_ref(apiVersion=None)]), "metadata.ownerReferences.apiVersion", INV),
    ("Pod", _meta(ownerReferences=[_ref(kind=None)]), "metadata.ownerReferences.kind", INV),
    ("Pod", _meta(ownerReferences=[_ref(name=None)]), "metadata.ownerReferences.name", INV),
    (
        "Pod",
        _meta(ownerReferences=[_ref(controller=True), _ref(name="o2", uid="u-2", controller=True)]),
        "metadata.ownerReferences",
        INV,
    ),
    ("Pod", _meta(ownerReferences=[_ref(kind="Event")]), "metadata.ownerReferences", INV),
    ("ConfigMap", _meta(finalizers=["Bad Name"]), "metadata.finalizers", INV),
    ("ConfigMap", _meta(finalizers=["custom"]), "metadata.finalizers[0]", INV),
    ("ConfigMap", _meta(finalizers=["orphan", "foregroundDeletion"]), "metadata.finalizers", INV),
]

_GATE = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
_TERM = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "zone"}
_SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}

POD_CASES: list[Case] = [
    ("Pod", _spec(containers=[]), "spec.containers", REQ),
    ("Pod", _spec(containers=[_ctr(name="")]), "spec.containers[0].name", REQ),
    ("Pod", _spec(containers=[_ctr(name="C")]), "spec.containers[0].name", INV),
    ("Pod", _spec(containers=[_ctr(), _ctr()]), "spec.containers[1].name", DUP),
    ("Pod", _spec(initContainers=[_ctr()]), "spec.initContainers[0].name", DUP),
    ("Pod", _spec(containers=[_ctr(image=None)]), "spec.containers[0].image", REQ),
    ("Pod", _spec(initContainers=[_ctr(name="i", image=None)]), "spec.initContainers[0].image", REQ),
    ("Pod", _spec(containers=[_ctr(image=" x")]), "spec.containers[0].image", INV),
    (
        "Pod",
        _spec(containers=[_ctr(ports=[{"containerPort": 0}])]),
        "spec.containers[0].ports[0].containerPort",
        REQ,
    ),
    (
        "Pod",
        _spec(containers=[_ctr(ports=[{"containerPort": 70000}])]),
        "spec.containers[0].ports[0].containerPort",
        INV,
    ),
    (
        "Pod",
        _spec(containers=[_ctr(ports=[{"containerPort": 80, "hostPort": 65536}])]),
        "spec.containers[0].ports[0].hostPort",
        INV,
    ),
    (
        "Pod",
        _spec(containers=[_ctr(ports=[{"containerPort": 80, "protocol": "HTTP"}])]),
        "spec.containers[0].ports[0].protocol",
        NSUP,
    ),
    (
        "Pod",
        _spec(containers=[_ctr(ports=[{"containerPort": 80, "name": "Web"}])]),
        "spec.containers[0].ports[0].name",
        INV,
    ),
    (
        "Pod",
        _spec(
            containers=[_ctr(ports=[{"containerPort": 80, "name": "w"}, {"containerPort": 81, "name": "w"}])]
        ),
        "spec.containers[0].ports[1].name",
        DUP,
    ),
    ("Pod", _spec(containers=[_ctr(env=[{"name": ""}])]), "spec.containers[0].env[0].name", REQ),
    ("Pod", _spec(containers=[_ctr(env=[{"name": "A=B"}])]), "spec.containers[0].env[0].name", INV),
    ("Pod", _res({"cpu": "-1"}), "spec.containers[0].resources.requests[cpu]", INV),
    ("Pod", _res(limits={"memory": "-1Gi"}), "spec.containers[0].resources.limits[memory]", INV),
    ("Pod", _res({"cpu": "2"}, {"cpu": "1"}), "spec.containers[0].resources.requests", INV),
    ("Pod", _res({"foo": "1"}), "spec.containers[0].resources.requests[foo]", INV),
    ("Pod", _res({"pods": "1"}), "spec.containers[0].resources.requests[pods]", INV),
    ("Pod", _res({"example.com/gpu": "1"}), "spec.containers[0].resources.limits", REQ),
    (
        "Pod",
        _res({"example.com/gpu": "1"}, {"example.com/gpu": "2"}),
        "spec.containers[0].resources.requests",
        INV,
    ),
    (
        "Pod",
        _res({"example.com/gpu": "500m"}, {"example.com/gpu": "500m"}),
        "spec.containers[0].resources.requests[example.com/gpu]",
        INV,
    ),
    (
        "Pod",
        _res({"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"}),
        "spec.containers[0].resources",
        FORB,
    ),
    ("Pod", _res({"example.com/a_": "1"}), "spec.containers[0].resources.requests[example.com/a_]", INV),
    ("Pod", _spec(restartPolicy="Sometimes"), "spec.restartPolicy", NSUP),
    ("Pod", _spec(dnsPolicy="Foo"), "spec.dnsPolicy", NSUP),
    ("Pod", _spec(preemptionPolicy="Always"), "spec.preemptionPolicy", NSUP),
    ("Pod", _spec(nodeSelector={"bad key": "v"}), "spec.nodeSelector", INV),
    ("Pod", _spec(nodeSelector={"k": "bad value"}), "spec.nodeSelector", INV),
    ("Pod", _spec(tolerations=[{"key": "k", "operator": "Foo"}]), "spec.tolerations[0].operator", NSUP),
    ("Pod", _spec(tolerations=[{"operator": "Equal", "value": "v"}]), "spec.tolerations[0].operator", INV),
    ("Pod", _spec(tolerations=[{"key": "k", "effect": "Sometimes"}]), "spec.tolerations[0].effect", NSUP),
    (
        "Pod",
        _spec(tolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        "spec.tolerations[0].effect",
        INV,
    ),
    (
        "Pod",
        _spec(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        "spec.tolerations[0].operator",
        INV,
    ),
    ("Pod", _spec(tolerations=[{"key": "bad key"}]), "spec.tolerations[0].key", INV),
    ("Pod", _spec(tolerations=[{"key": "k", "value": "bad value"}]), "spec.tolerations[0].operator", INV),
    (
        "Pod",
        _spec(
            affinity={
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
            }
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        REQ,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In"}]}]
                    }
                }
            }
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values",
        REQ,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near"}]}]
                    }
                }
            }
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator",
        INV,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": _GATE}]
                }
            }
        ),
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        INV,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{**_TERM, "topologyKey": ""}]
                }
            }
        ),
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        REQ,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": _TERM}
                    ]
                }
            }
        ),
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        INV,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]},
                            "topologyKey": "zone",
                        }
                    ]
                }
            }
        ),
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".labelSelector.matchExpressions[0].operator",
        INV,
    ),
    (
        "Pod",
        _spec(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{**_TERM, "namespaces": ["B_"]}]
                }
            }
        ),
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace",
        INV,
    ),
    (
        "Pod",
        _spec(topologySpreadConstraints=[{**_SPREAD, "maxSkew": 0}]),
        "spec.topologySpreadConstraints[0].maxSkew",
        INV,
    ),
    (
        "Pod",
        _spec(topologySpreadConstraints=[{**_SPREAD, "topologyKey": ""}]),
        "spec.topologySpreadConstraints[0].topologyKey",
        REQ,
    ),
    (
        "Pod",
        _spec(topologySpreadConstraints=[{**_SPREAD, "whenUnsatisfiable": "Maybe"}]),
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        NSUP,
    ),
    (
        "Pod",
        _spec(topologySpreadConstraints=[_SPREAD, _SPREAD]),
        "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}",
        DUP,
    ),
    (
        "Pod",
        _spec(
            topologySpreadConstraints=[{**_SPREAD, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]
        ),
        "spec.topologySpreadConstraints[0].minDomains",
        INV,
    ),
    (
        "Pod",
        _spec(topologySpreadConstraints=[{**_SPREAD, "nodeTaintsPolicy": "Sometimes"}]),
        "spec.topologySpreadConstraints[0].nodeTaintsPolicy",
        NSUP,
    ),
    ("Pod", _spec(schedulingGates=[{"name": "bad gate"}]), "spec.schedulingGates[0]", INV),
    ("Pod", _spec(schedulingGates=[{"name": "g"}, {"name": "g"}]), "spec.schedulingGates[1]", DUP),
    ("Pod", _spec(overhead={"cpu": "-1"}), "spec.overhead[cpu]", INV),
    ("Pod", _spec(volumes=[{"name": "v"}, {"name": "v"}]), "spec.volumes[1].name", DUP),
    ("Pod", _spec(volumes=[{"name": "Bad"}]), "spec.volumes[0].name", INV),
    (
        "Pod",
        _spec(volumes=[{"name": "v", "emptyDir": {}, "configMap": {"name": "c"}}]),
        "spec.volumes[0].configMap",
        FORB,
    ),
    (
        "Pod",
        _spec(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]),
        "spec.volumes[0].persistentVolumeClaim.claimName",
        REQ,
    ),
    (
        "Pod",
        _spec(volumes=[{"name": "v", "ephemeral": {}}]),
        "spec.volumes[0].ephemeral.volumeClaimTemplate",
        REQ,
    ),
    ("Pod", _spec(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds", INV),
    ("Pod", _spec(nodeName="Bad_Node"), "spec.nodeName", INV),
    ("Pod", _spec(schedulerName="Bad Name"), "spec.schedulerName", INV),
    ("Pod", _spec(hostname="a.b"), "spec.hostname", INV),
    ("Pod", _spec(containers=[_ctr(restartPolicy="Always")]), "spec.containers[0].restartPolicy", FORB),
    (
        "Pod",
        _spec(initContainers=[_ctr(name="i", restartPolicy="Never")]),
        "spec.initContainers[0].restartPolicy",
        NSUP,
    ),
]

_TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}

NODE_CASES: list[Case] = [
    ("Node", _meta(name="Bad"), "metadata.name", INV),
    ("Node", {"status": {"capacity": {"cpu": "-1"}}}, "status.capacity.cpu", INV),
    ("Node", {"status": {"allocatable": {"pods": "1.5"}}}, "status.allocatable.pods", INV),
    (
        "Node",
        {"status": {"allocatable": {"example.com/foo": "500m"}}},
        "status.allocatable.example.com/foo",
        INV,
    ),
    ("Node", {"status": {"capacity": {"memory": "-8Gi"}}}, "status.capacity.memory", INV),
    ("Node", _spec(taints=[{**_TAINT, "effect": ""}]), "metadata.taints[0].effect", REQ),
    ("Node", _spec(taints=[{**_TAINT, "effect": "Bad"}]), "metadata.taints[0].effect", NSUP),
    ("Node", _spec(taints=[{**_TAINT, "key": ""}]), "metadata.taints[0].key", INV),
    ("Node", _spec(taints=[{**_TAINT, "key": "a/b/c"}]), "metadata.taints[0].key", INV),
    ("Node", _spec(taints=[{**_TAINT, "value": "bad value"}]), "metadata.taints[0].value", INV),
    ("Node", _spec(taints=[_TAINT, {**_TAINT, "value": "w"}]), "metadata.taints[1]", DUP),
    ("Node", _spec(podCIDRs=["not-a-cidr"]), "spec.podCIDRs[0]", INV),
    ("Node", _spec(podCIDRs=["10.0.0.0/24", "10.1.0.0/24"]), "spec.podCIDRs", INV),
    ("Node", _spec(podCIDRs=["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"]), "spec.podCIDRs", INV),
]

ALL_CASES: list[Case] = META_CASES + POD_CASES + NODE_CASES

CORPUS = Path(__file__).parent / "corpus" / "invalid_objects_core.yaml"


def write_corpus(path: Path = CORPUS) -> None:
    """The cases as the corpus file: a YAML list of {kind, object, field}, without aliases."""
    import yaml

    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    entries = [
        {"kind": kind, "object": build(kind, frag), "field": field} for kind, frag, field, _ in ALL_CASES
    ]
    header = "# Written by `python -m tests.sim_validation_cases`; one invalid object per rule.\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        header + yaml.dump(entries, Dumper=NoAliases, sort_keys=False, allow_unicode=False, width=1000)
    )


if __name__ == "__main__":
    write_corpus(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS)
