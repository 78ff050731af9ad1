"""The official ``kubernetes`` Python client and ``kubectl`` list, get and watch every served kind.

Real clients decode what the embedded cluster serves into their own models (the Python client with
its client-side validation on, as by default), so an object missing a field a kubelet or
kube-apiserver always fills (a node's nodeInfo, a condition's status) fails here. One cluster for
the module holds an object of every kind; each kind is one test; create-only reviews get a create.
"""

from __future__ import annotations

import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.sim import SimCluster
from ksched.sim._resources import CREATE_ONLY, RESOURCES, ResourceType
from tests.integration.conftest import SMALL

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
NS = "default"
_POD_SPEC = {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
_SELECTOR = {"matchLabels": {"app": "web"}}
_TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": _POD_SPEC}
_RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
_SUBJECTS = [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]
_NOW = "2024-01-02T03:04:05Z"
_NOW_MICRO = "2024-01-02T03:04:05.000000Z"

SAMPLES: dict[str, dict[str, Any]] = {
    "pods": {"metadata": {"name": "web-0", "labels": {"app": "web"}}, "spec": _POD_SPEC},
    "events": {
        "metadata": {"name": "web-0.1"},
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": "web-0", "apiVersion": "v1"},
        "reason": "Scheduled",
        "message": "Successfully assigned default/web-0 to node-0",
        "type": "Normal",
        "source": {"component": "default-scheduler"},
        "eventTime": _NOW_MICRO,
        "action": "Binding",
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-ksched",
        "firstTimestamp": None,
        "lastTimestamp": None,
        "count": 1,
    },
    "leases.coordination.k8s.io": {
        "metadata": {"name": "kube-scheduler"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": _NOW_MICRO},
    },
    "poddisruptionbudgets.policy": {
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": _SELECTOR},
    },
    "configmaps": {"metadata": {"name": "cfg"}, "data": {"k": "v"}},
    "serviceaccounts": {"metadata": {"name": "builder"}},
    "deployments.apps": {"metadata": {"name": "web"}, "spec": {"selector": _SELECTOR, "template": _TEMPLATE}},
    "clusterroles.rbac.authorization.k8s.io": {"metadata": {"name": "reader"}, "rules": _RULES},
    "clusterrolebindings.rbac.authorization.k8s.io": {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": _SUBJECTS,
    },
    "roles.rbac.authorization.k8s.io": {"metadata": {"name": "reader"}, "rules": _RULES},
    "rolebindings.rbac.authorization.k8s.io": {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": _SUBJECTS,
    },
    "services": {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    "replicationcontrollers": {"metadata": {"name": "web"}, "spec": {"template": _TEMPLATE}},
    "replicasets.apps": {"metadata": {"name": "web"}, "spec": {"selector": _SELECTOR, "template": _TEMPLATE}},
    "statefulsets.apps": {
        "metadata": {"name": "web"},
        "spec": {"selector": _SELECTOR, "template": _TEMPLATE, "serviceName": "web"},
    },
    "persistentvolumes": {
        "metadata": {"name": "pv-1"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv-1"},
        },
    },
    "persistentvolumeclaims": {
        "metadata": {"name": "claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    },
    "storageclasses.storage.k8s.io": {"metadata": {"name": "fast"}, "provisioner": "fast.example.com"},
    "csinodes.storage.k8s.io": {
        "metadata": {"name": "node-0"},
        "spec": {"drivers": [{"name": "fast.example.com", "nodeID": "node-0"}]},
    },
    "csidrivers.storage.k8s.io": {"metadata": {"name": "example.com"}, "spec": {}},
    "csistoragecapacities.storage.k8s.io": {
        "metadata": {"name": "cap-1"},
        "storageClassName": "fast",
        "capacity": "10Gi",
    },
    "volumeattachments.storage.k8s.io": {
        "metadata": {"name": "va-1"},
        "spec": {"attacher": "example.com", "nodeName": "node-0", "source": {"persistentVolumeName": "pv-1"}},
    },
    "volumeattributesclasses.storage.k8s.io": {
        "metadata": {"name": "gold"},
        "driverName": "example.com",
        "parameters": {"iops": "3000"},
    },
}
"""One object per stored kind the cluster does not make itself (nodes and namespaces it has)."""

REVIEWS: dict[str, dict[str, Any]] = {
    "tokenreviews.authentication.k8s.io": {"spec": {"token": "not-a-token"}},
    "selfsubjectreviews.authentication.k8s.io": {},
    "subjectaccessreviews.authorization.k8s.io": {
        "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": NS}}
    },
    "selfsubjectaccessreviews.authorization.k8s.io": {
        "spec": {"resourceAttributes": {"verb": "list", "resource": "nodes"}}
    },
}

_SERVED = [r for r in RESOURCES if r.verbs != CREATE_ONLY]
_CREATE_ONLY = [r for r in RESOURCES if r.verbs == CREATE_ONLY]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Path]]:
    """One cluster (3 simulated nodes) with an object of every kind, and a kubeconfig for it."""
    sim = SimCluster(SMALL)
    sim.add_nodes(3, zones=2)
    for key, obj in SAMPLES.items():
        rtype = next(r for r in RESOURCES if r.key == key)
        sim.store.create(rtype, obj, namespace=NS if rtype.namespaced else None)
    sim.start()
    try:
        yield sim, sim.write_kubeconfig(tmp_path_factory.mktemp("clients") / "kubeconfig")
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def api_client(cluster: tuple[SimCluster, Path]) -> Iterator[Any]:
    from kubernetes import client

    api = client.ApiClient(client.Configuration(host=cluster[0].url))
    try:
        yield api
    finally:
        api.close()


def _snake(kind: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kind).lower()


def _typed_api(api_client: Any, rtype: ResourceType) -> Any:
    """The generated ``<Group><Version>Api`` serving ``rtype`` (CoreV1Api, RbacAuthorizationV1Api, ...)."""
    from kubernetes import client

    group = rtype.group.removesuffix(".k8s.io")
    name = "".join(part.capitalize() for part in group.split(".")) or "Core"
    return getattr(client, f"{name}{rtype.version.capitalize()}Api")(api_client)


def _methods(api: Any, rtype: ResourceType) -> tuple[Any, Any, dict[str, str]]:
    """(list, read, the namespace argument) of the typed API."""
    scope = "namespaced_" if rtype.namespaced else ""
    kwargs = {"namespace": NS} if rtype.namespaced else {}
    return (
        getattr(api, f"list_{scope}{_snake(rtype.kind)}"),
        getattr(api, f"read_{scope}{_snake(rtype.kind)}"),
        kwargs,
    )


@pytest.mark.parametrize("rtype", _SERVED, ids=lambda r: r.key + "@" + r.api_version)
def test_python_client_lists_gets_and_watches(api_client: Any, rtype: ResourceType) -> None:
    from kubernetes import watch

    list_fn, read_fn, kwargs = _methods(_typed_api(api_client, rtype), rtype)
    items = list_fn(**kwargs).items
    assert items, f"no {rtype.plural} to read"
    name = items[0].metadata.name
    assert read_fn(name, **kwargs).metadata.name == name
    w = watch.Watch()
    seen = []
    for ev in w.stream(list_fn, timeout_seconds=2, _request_timeout=5, **kwargs):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == min(len(items), 3):
            w.stop()
    assert seen and all(t == "ADDED" for t, _ in seen)


@pytest.mark.parametrize("rtype", _CREATE_ONLY, ids=lambda r: r.key)
def test_python_client_creates_reviews(api_client: Any, rtype: ResourceType) -> None:
    from kubernetes import client

    api = _typed_api(api_client, rtype)
    model = getattr(client, f"V1{rtype.kind}")
    body = model.from_dict({"apiVersion": rtype.api_version, "kind": rtype.kind, **REVIEWS[rtype.key]})
    got = getattr(api, f"create_{_snake(rtype.kind)}")(body)
    assert got.status is not None


def _kubectl(kubeconfig: Path, *args: str) -> str:
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


def _kubectl_watch_first(kubeconfig: Path, resource: str, *scope: str) -> str:
    """The first line ``kubectl get --watch -o name`` prints (then the watch is stopped)."""
    with subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "get", resource, *scope, "--watch", "-o", "name"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stdout], [], [], 0.2)
                if ready:
                    return proc.stdout.readline().strip()
                if proc.poll() is not None:
                    break
            err = proc.stderr.read() if proc.poll() is not None else ""
            raise AssertionError(f"kubectl get {resource} --watch printed nothing: {err}")
        finally:
            proc.kill()


@pytest.mark.kubectl
@pytest.mark.parametrize("rtype", _SERVED, ids=lambda r: r.key + "@" + r.api_version)
def test_kubectl_gets_and_watches(cluster: tuple[SimCluster, Path], rtype: ResourceType) -> None:
    import json

    kubeconfig = cluster[1]
    resource = f"{rtype.plural}.{rtype.version}.{rtype.group}" if rtype.group else rtype.plural
    scope = ("-n", NS) if rtype.namespaced else ()
    got = json.loads(_kubectl(kubeconfig, "get", resource, *scope, "-o", "json"))
    assert got["items"], f"no {rtype.plural}"
    name = got["items"][0]["metadata"]["name"]
    one = json.loads(_kubectl(kubeconfig, "get", resource, name, *scope, "-o", "json"))
    assert one["metadata"]["name"] == name and one["kind"] == rtype.kind
    assert _kubectl_watch_first(kubeconfig, resource, *scope).endswith("/" + name)
