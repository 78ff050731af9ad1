"""A valid object of every stored kind, to write wrong types into (shared by the decode tests)."""

from __future__ import annotations

from typing import Any

_POD_SPEC = {"containers": [{"name": "c", "image": "nginx"}]}
_TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": _POD_SPEC}
_SELECTOR = {"matchLabels": {"app": "a"}}
_CSI = {"driver": "d.csi", "volumeHandle": "h"}

SPECS: dict[str, dict[str, Any]] = {
    "pods": {"spec": _POD_SPEC},
    "nodes": {},
    "namespaces": {},
    "events": {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R"},
    "events.events.k8s.io": {
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "c/x",
        "reportingInstance": "i",
        "action": "A",
        "reason": "R",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    },
    "leases.coordination.k8s.io": {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
    "poddisruptionbudgets.policy": {"spec": {"minAvailable": 1, "selector": _SELECTOR}},
    "configmaps": {"data": {"k": "v"}},
    "serviceaccounts": {},
    "deployments.apps": {"spec": {"replicas": 1, "selector": _SELECTOR, "template": _TEMPLATE}},
    "replicasets.apps": {"spec": {"replicas": 1, "selector": _SELECTOR, "template": _TEMPLATE}},
    "statefulsets.apps": {
        "spec": {"replicas": 1, "serviceName": "s", "selector": _SELECTOR, "template": _TEMPLATE}
    },
    "replicationcontrollers": {"spec": {"replicas": 1, "selector": {"app": "a"}, "template": _TEMPLATE}},
    "clusterroles.rbac.authorization.k8s.io": {
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    },
    "roles.rbac.authorization.k8s.io": {
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    },
    "clusterrolebindings.rbac.authorization.k8s.io": {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    "rolebindings.rbac.authorization.k8s.io": {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}],
    },
    "services": {"spec": {"ports": [{"port": 80}], "selector": {"app": "a"}}},
    "persistentvolumes": {
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "csi": _CSI}
    },
    "persistentvolumeclaims": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "storageclasses.storage.k8s.io": {"provisioner": "d.csi"},
    "csinodes.storage.k8s.io": {"spec": {"drivers": []}},
    "csidrivers.storage.k8s.io": {"spec": {}},
    "csistoragecapacities.storage.k8s.io": {"storageClassName": "sc"},
    "volumeattachments.storage.k8s.io": {
        "spec": {"attacher": "d.csi", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}
    },
    "volumeattributesclasses.storage.k8s.io": {"driverName": "d.csi"},
}
"""Store key -> the object's fields besides apiVersion, kind and metadata."""


def seed(key: str, api_version: str, kind: str, name: str) -> dict[str, Any]:
    """A valid ``kind`` named ``name`` (a CSINode is named after its node)."""
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **SPECS[key]}
