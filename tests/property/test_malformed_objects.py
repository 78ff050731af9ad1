"""Malformed and extreme API objects through ksched's decoders: a clear error or a record, never a crash.

Each example starts from a valid, feature-rich Pod / Node / Namespace / PodDisruptionBudget and applies
one to three mutations at random places in it: delete a field (missing required fields), replace a
value with one of another type, an invalid quantity, an integer around 2^63, a unicode or huge string,
or an empty container. The decoder the informer uses must then either return a record or raise
:class:`~ksched.errors.ObjectError` whose message names the kind, namespace/name and the field. Any
other exception is a bug: the informer would only log it as "cannot be decoded", with no field.

Examples per kind: a few hundred by default (CI), 1,000 with ``HYPOTHESIS_PROFILE=full``
(profiles ``ksched-malformed-ci`` and ``ksched-malformed-full`` below; they are used by name, so
other hypothesis suites keep their own settings). The strategies are shared with the other
``test_malformed_*`` modules.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.errors import ObjectError
from ksched.model.namespace import namespace_from_dict
from ksched.model.node import node_from_dict
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import pod_from_dict

_COMMON: dict[str, Any] = {"deadline": None, "database": None, "suppress_health_check": list(HealthCheck)}
settings.register_profile("ksched-malformed-ci", max_examples=300, **_COMMON)
settings.register_profile("ksched-malformed-full", max_examples=1000, **_COMMON)
FULL = os.environ.get("HYPOTHESIS_PROFILE") == "full"
PROFILE = settings.get_profile("ksched-malformed-full" if FULL else "ksched-malformed-ci")

BAD_QUANTITIES = (
    "", "1.2.3", "-1", "1e999", "1E-999999", "1Qi", "12Mi3", " 1", "1 ", "+-1", "0x10", "∞", "１",
    "9223372036854775807", "9223372036854775808", "99999999999999999999999Ei", "1e18", "-0", ".", "m",
    "100mm", "NaN", "1/2",
)
EXTREME_INTS = (2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64, 2**31, -(2**31) - 1, 0, -1)


def weird_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(EXTREME_INTS),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(BAD_QUANTITIES),
        st.text(max_size=8),
        st.text(min_size=64, max_size=300),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
        st.just({}),
        st.just([]),
        st.just([None]),
    )


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _apply(obj: Any, path: tuple[Any, ...], action: str, value: Any) -> None:
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        if isinstance(parent, dict):
            parent.pop(last, None)
        else:
            parent.pop(last)
    else:
        parent[last] = value


@st.composite
def mutated(
    draw: st.DrawFn, base: dict[str, Any], name: str | None, protect_name: bool = True
) -> dict[str, Any]:
    """``base`` with 1-3 random mutations; ``metadata.name`` is set to ``name`` unless None, and kept
    intact when ``protect_name``, so a test can find the object again."""
    obj = copy.deepcopy(base)
    if name is not None:
        obj.setdefault("metadata", {})["name"] = name
    for _ in range(draw(st.integers(1, 3))):
        protected = {("metadata",), ("metadata", "name"), ("metadata", "namespace")}
        if not protect_name:
            protected = set()
        paths = [p for p in _paths(obj) if p not in protected]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(("delete", "replace", "replace")))
        _apply(obj, path, action, draw(weird_values()) if action == "replace" else None)
        if not isinstance(obj.get("metadata"), dict):
            break
    return obj


def base_pod(name: str = "p", namespace: str = "default") -> dict[str, Any]:
    ctr = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": "0.0.0.0"}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi", "example.com/gpu": "1"},
            "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "1"},
        },
    }
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]}
    pod_term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname",
                "namespaces": ["default"], "namespaceSelector": {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                     "labels": {"app": "x", "tier": "ünïcode-ok"},
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "containers": [ctr],
            "initContainers": [{"name": "i", "image": "busybox", "resources": {"requests": {"cpu": "2"}},
                                "restartPolicy": "Always"}],
            "overhead": {"cpu": "10m"},
            "nodeSelector": {"disk": "ssd"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": term}],
                },
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": pod_term}]},
            },
            "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule",
                             "tolerationSeconds": 30}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": "x"}}, "minDomains": 2}],
            "priority": 100,
            "priorityClassName": "high",
            "preemptionPolicy": "PreemptLowerPriority",
            "schedulerName": "default-scheduler",
            "schedulingGates": [],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "pvc"}}],
            "terminationGracePeriodSeconds": 30,
        },
        "status": {
            "phase": "Pending",
            "nominatedNodeName": "n1",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": "0/3 nodes"}],
        },
    }


def base_node(name: str = "n") -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "example.com/gpu": "2", "hugepages-2Mi": "0"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}",
                     "labels": {"kubernetes.io/hostname": name, "zone": "a", "disk": "ssd"}},
        "spec": {"unschedulable": False,
                 "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 700000}],
        },
    }


def base_namespace(name: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"team": "a"}}}


def base_pdb(name: str = "pdb", namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"minAvailable": 1,
                 "selector": {"matchLabels": {"app": "x"},
                              "matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
        "status": {"disruptionsAllowed": 1, "disruptedPods": {"p1": "2026-01-01T00:00:00Z"}},
    }


KINDS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Any], Any], str]] = {
    "Pod": (base_pod, pod_from_dict, "default"),
    "Node": (base_node, node_from_dict, ""),
    "Namespace": (base_namespace, namespace_from_dict, ""),
    "PodDisruptionBudget": (base_pdb, pdb_from_dict, "default"),
}


def check_decode(kind: str, obj: dict[str, Any]) -> Any:
    """Decode; on ObjectError check that the message names kind, namespace/name and a field."""
    decode = KINDS[kind][1]
    namespace = KINDS[kind][2]
    try:
        return decode(obj)
    except ObjectError as exc:
        msg = str(exc)
        name = obj["metadata"]["name"]
        who = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        assert msg.startswith(who), f"error does not name the object ({who}): {msg}"
        assert exc.field, f"error names no field: {msg}"
        assert f": {exc.field}: " in msg
        return None


def test_malformed_bases_are_valid() -> None:
    for kind, (base, decode, _) in KINDS.items():
        assert decode(base()) is not None, kind


@PROFILE
@given(mutated(base_pod(), "bad-pod"))
def test_malformed_pod_decodes_or_names_the_field(obj: dict[str, Any]) -> None:
    check_decode("Pod", obj)


@PROFILE
@given(mutated(base_node(), "bad-node"))
def test_malformed_node_decodes_or_names_the_field(obj: dict[str, Any]) -> None:
    check_decode("Node", obj)


@PROFILE
@given(mutated(base_namespace(), "bad-ns"))
def test_malformed_namespace_decodes_or_names_the_field(obj: dict[str, Any]) -> None:
    check_decode("Namespace", obj)


@PROFILE
@given(mutated(base_pdb(), "bad-pdb"))
def test_malformed_pdb_decodes_or_names_the_field(obj: dict[str, Any]) -> None:
    check_decode("PodDisruptionBudget", obj)
