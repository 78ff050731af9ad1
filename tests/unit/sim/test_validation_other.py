"""Validation of the other served kinds: kube-apiserver v1.35's field errors, paths and reasons.

After ``pkg/apis/{core,apps,policy,rbac,coordination}/validation``; each write is answered with one
422 Invalid whose causes name the fields.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.sim._resources import BY_KEY, RESOURCES, ResourceType
from ksched.sim._status import StatusError
from ksched.sim.store import Store
from tests.unit.sim.decode_seeds import SPECS, seed

CORPUS = Path(__file__).parents[2] / "corpus" / "invalid_objects_other.yaml"
RBAC = "rbac.authorization.k8s.io"
TEMPLATE = SPECS["deployments.apps"]["spec"]["template"]
IN_WITHOUT_VALUES = {"key": "app", "operator": "In"}


def obj(key: str, name: str = "x", **fields: Any) -> dict[str, Any]:
    r = BY_KEY[key]
    return {**copy.deepcopy(seed(key, r.api_version, r.kind, name)), **fields}


def create(store: Store, key: str, body: dict[str, Any]) -> dict[str, Any]:
    return store.create(key, body, namespace="default" if BY_KEY[key].namespaced else None)


def causes(key: str, body: dict[str, Any], store: Store | None = None) -> list[tuple[str, str, str]]:
    with pytest.raises(StatusError) as info:
        create(store or Store(), key, body)
    assert info.value.code == 422, info.value.message
    return [(c["reason"], c["field"], c["message"]) for c in info.value.details["causes"]]


@pytest.mark.parametrize("key", sorted(SPECS))
def test_every_seed_is_valid(key: str) -> None:
    name = "n-0" if key == "csinodes.storage.k8s.io" else "x"
    assert create(Store(), key, obj(key, name))["metadata"]["name"] == name


def test_the_corpus_is_refused_naming_each_field() -> None:
    entries = yaml.safe_load(CORPUS.read_text())
    assert len(entries) >= 30
    for entry in entries:
        rtype = _rtype(entry)
        with pytest.raises(StatusError) as info:
            Store().create(
                rtype, copy.deepcopy(entry["object"]), namespace="default" if rtype.namespaced else None
            )
        fields = [c["field"] for c in (info.value.details or {}).get("causes", [])]
        assert info.value.code == entry["code"] and entry["field"] in fields, (entry, info.value.message)


def _rtype(entry: dict[str, Any]) -> ResourceType:
    return next(r for r in RESOURCES if r.kind == entry["kind"] and r.api_version == entry["apiVersion"])


PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)

MESSAGES = [
    (
        "leases.coordination.k8s.io",
        {"spec": {"leaseDurationSeconds": -3}},
        ("FieldValueInvalid", "spec.leaseDurationSeconds", "Invalid value: -3: must be greater than 0"),
    ),
    (
        "poddisruptionbudgets.policy",
        {"spec": {"maxUnavailable": "1x", "selector": {"matchLabels": {"app": "a"}}}},
        (
            "FieldValueInvalid",
            "spec.maxUnavailable",
            'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"1x"}: ' + PERCENT,
        ),
    ),
    (
        "deployments.apps",
        {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": TEMPLATE}},
        (
            "FieldValueInvalid",
            "spec.template.metadata.labels",
            'Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`',
        ),
    ),
    (
        "deployments.apps",
        {"spec": {"template": TEMPLATE, "selector": {"matchExpressions": [IN_WITHOUT_VALUES]}}},
        (
            "FieldValueRequired",
            "spec.selector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
    ),
    (
        "roles.rbac.authorization.k8s.io",
        {"rules": [{"verbs": ["get"], "apiGroups": [""]}]},
        (
            "FieldValueRequired",
            "rules[0].resources",
            "Required value: resource rules must supply at least one resource",
        ),
    ),
    (
        "rolebindings.rbac.authorization.k8s.io",
        {"roleRef": {"apiGroup": "rbac", "kind": "Role", "name": "r"}},
        (
            "FieldValueNotSupported",
            "roleRef.apiGroup",
            'Unsupported value: "rbac": supported values: "rbac.authorization.k8s.io"',
        ),
    ),
    (
        "configmaps",
        {"data": {"big": "x" * (1024 * 1024 + 1)}},
        ("FieldValueTooLong", "", "Too long: may not be more than 1048576 bytes"),
    ),
    (
        "services",
        {"spec": {"ports": [{"port": 80, "targetPort": 0}]}},
        (
            "FieldValueInvalid",
            "spec.ports[0].targetPort",
            "Invalid value: 0: must be between 1 and 65535, inclusive",
        ),
    ),
    (
        "events",
        {"metadata": {"name": "x", "namespace": "default"}, "involvedObject": {"namespace": "kube-system"}},
        (
            "FieldValueInvalid",
            "involvedObject.namespace",
            'Invalid value: "kube-system": does not match event.namespace',
        ),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("key", "fields", "cause"), MESSAGES)
def test_upstreams_messages(key: str, fields: dict[str, Any], cause: tuple[str, str, str]) -> None:
    assert cause in causes(key, obj(key, **fields))


def _update(store: Store, key: str, change: Any, subresource: str = "") -> list[tuple[str, str, str]]:
    ns = "default" if BY_KEY[key].namespaced else ""
    with pytest.raises(StatusError) as info:
        store.mutate(key, "x", ns, change, subresource=subresource)
    assert info.value.code == 422, info.value.message
    return [(c["reason"], c["field"], c["message"]) for c in info.value.details["causes"]]


def test_apps_selectors_are_immutable() -> None:
    store = Store()
    create(store, "deployments.apps", obj("deployments.apps"))

    def reselect(cur: dict[str, Any]) -> dict[str, Any]:
        spec = {**cur["spec"], "selector": {"matchLabels": {"app": "a", "tier": "t"}}}
        spec["template"] = {**spec["template"], "metadata": {"labels": {"app": "a", "tier": "t"}}}
        return {**cur, "spec": spec}

    shown = (
        'v1.LabelSelector{MatchLabels:map[string]string{"app":"a", "tier":"t"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
    )
    assert _update(store, "deployments.apps", reselect) == [
        ("FieldValueInvalid", "spec.selector", f"Invalid value: {shown}: field is immutable")
    ]


def test_statefulset_spec_is_immutable_but_for_the_listed_fields() -> None:
    store = Store()
    create(store, "statefulsets.apps", obj("statefulsets.apps"))
    store.mutate(
        "statefulsets.apps", "x", "default", lambda cur: {**cur, "spec": {**cur["spec"], "replicas": 3}}
    )
    got = _update(
        store, "statefulsets.apps", lambda cur: {**cur, "spec": {**cur["spec"], "serviceName": "other"}}
    )
    assert [(r, f) for r, f, _ in got] == [("FieldValueForbidden", "spec")]
    assert "are forbidden" in got[0][2]


def test_a_role_ref_cannot_change() -> None:
    store = Store()
    key = f"rolebindings.{RBAC}"
    create(store, key, obj(key))
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "r"}
    assert _update(store, key, lambda cur: {**cur, "roleRef": ref}) == [
        (
            "FieldValueInvalid",
            "roleRef",
            'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
            'Name:"r"}: cannot change roleRef',
        )
    ]


def test_an_immutable_configmap_keeps_its_data() -> None:
    store = Store()
    create(store, "configmaps", obj("configmaps", immutable=True))
    got = _update(store, "configmaps", lambda cur: {**cur, "immutable": False, "data": {"k": "w"}})
    assert got == [
        ("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"),
        ("FieldValueForbidden", "data", "Forbidden: field is immutable when `immutable` is set"),
    ]


def test_a_set_cluster_ip_may_not_change() -> None:
    store = Store()
    body = obj("services")
    body["spec"] = {**body["spec"], "clusterIP": "10.0.0.10"}
    create(store, "services", body)
    got = _update(store, "services", lambda cur: {**cur, "spec": {**cur["spec"], "clusterIP": "10.0.0.11"}})
    assert got == [
        ("FieldValueInvalid", "spec.clusterIPs[0]", 'Invalid value: "10.0.0.11": may not change once set')
    ]


def test_status_writes_keep_counts_in_bounds() -> None:
    store = Store()
    create(store, "replicasets.apps", obj("replicasets.apps"))
    status = {"replicas": 1, "readyReplicas": 2, "availableReplicas": -1}
    got = _update(store, "replicasets.apps", lambda cur: {**cur, "status": status}, subresource="status")
    assert got == [
        (
            "FieldValueInvalid",
            "status.availableReplicas",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "FieldValueInvalid",
            "status.readyReplicas",
            "Invalid value: 2: cannot be greater than status.replicas",
        ),
    ]


def test_a_namespace_status_phase_follows_deletion() -> None:
    store = Store()
    create(store, "namespaces", obj("namespaces"))
    got = _update(
        store, "namespaces", lambda cur: {**cur, "status": {"phase": "Terminating"}}, subresource="status"
    )
    assert got == [
        (
            "FieldValueInvalid",
            "status.Phase",
            "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty",
        )
    ]
