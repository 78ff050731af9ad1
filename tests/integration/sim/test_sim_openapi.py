"""The sim's OpenAPI documents and field validation, driven by the real kubectl where it reads them.

kubectl validates a ``kind: List`` on the client against ``/openapi/v2`` (protobuf), and leaves
single objects to the server when ``/openapi/v3`` declares ``fieldValidation``; both paths must
report an unknown field as against kube-apiserver. The messages asserted are kubectl's own and
kube-apiserver's (``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go``:
``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: ...``).

Not ported: kube-apiserver's protobuf answer for ``/openapi/v3`` (kubectl asks for JSON there);
duplicate-key detection of strict decoding (the sim's JSON parser keeps the last key); the status
reset of a create (``PrepareForCreate``: a created pod's status is ``Pending`` upstream), which the
sim leaves out on purpose so that tests can seed state (see ``ksched/sim/_storage_api.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import shutil
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from simhttp import request

from ksched.sim import SimCluster, openapi_gen
from ksched.sim import _openapi_pb as pb
from ksched.sim._resources import CREATE_ONLY, RESOURCES

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
PROTOBUF_ASKED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}


def run(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def ok(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    proc = run(kubeconfig, *args, stdin=stdin)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


def get(url: str, path: str, accept: str) -> tuple[int, dict[str, str], bytes]:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept": accept} if accept else {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def with_unknown_field(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "name": name}, "spec": {**obj["spec"], "foo": "bar"}}


# -- kubectl --------------------------------------------------------------------------------------
@pytest.mark.kubectl
def test_create_list_from_get_nodes_pods_output(sim: SimCluster, kubeconfig: Path) -> None:
    for name in ("p1", "p2"):
        ok(kubeconfig, "run", name, "--image=nginx")
    sim.store.mutate(
        "pods",
        "p1",
        "default",
        lambda p: {**p, "spec": {**p["spec"], "nodeName": "node-1"}},
        subresource="binding",
    )
    deadline = time.monotonic() + 10
    while sim.store.get("pods", "p1", "default")["status"].get("phase") != "Running":
        assert time.monotonic() < deadline, "the kubelet stand-in starts a bound pod"
        time.sleep(0.05)
    listing = ok(kubeconfig, "get", "nodes,pods", "-o", "yaml")
    assert "containerStatuses:" in listing and "nodeInfo:" in listing, "statuses are validated too"
    old_uids = {i["metadata"]["uid"] for i in yaml.safe_load(listing)["items"]}
    ok(kubeconfig, "delete", "pods", "--all")
    ok(kubeconfig, "delete", "nodes", "--all")
    out = ok(kubeconfig, "create", "-f", "-", stdin=listing)
    assert out.split() == [
        "node/node-0", "created", "node/node-1", "created", "node/node-2", "created",
        "pod/p1", "created", "pod/p2", "created",
    ]  # fmt: skip
    pods = {p["metadata"]["name"]: p for p in sim.store.list("pods")}
    assert pods["p1"]["spec"]["nodeName"] == "node-1"
    assert {p["metadata"]["uid"] for p in pods.values()}.isdisjoint(old_uids), "uids are the server's"
    assert len(sim.store.list("nodes")) == 3


@pytest.mark.kubectl
def test_list_with_an_unknown_field_is_refused_by_kubectl(sim: SimCluster, kubeconfig: Path) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": [POD, with_unknown_field(POD, "web-2")]}
    proc = run(kubeconfig, "create", "-f", "-", stdin=json.dumps(doc))
    assert proc.returncode == 1
    assert 'ValidationError(Pod.spec): unknown field "foo" in io.k8s.api.core.v1.PodSpec' in proc.stderr
    assert sim.store.list("pods") == [], "client-side validation fails before anything is sent"
    lax = ok(kubeconfig, "create", "-f", "-", "--validate=false", stdin=json.dumps(doc))
    assert lax.split() == ["pod/web-1", "created", "pod/web-2", "created"]


@pytest.mark.kubectl
@pytest.mark.parametrize("validate", ["", "--validate=true", "--validate=strict"])
def test_strict_validation_of_a_single_object_is_the_servers(
    sim: SimCluster, kubeconfig: Path, validate: str
) -> None:
    args = ["create", "-f", "-", *([validate] if validate else [])]
    proc = run(kubeconfig, *args, stdin=json.dumps(with_unknown_field(POD, "bad")))
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be '
        'handled as a Pod: strict decoding error: unknown field "spec.foo"'
    )
    assert sim.store.get("pods", "bad", "default") is None


@pytest.mark.kubectl
@pytest.mark.parametrize(("validate", "warned"), [("--validate=warn", True), ("--validate=false", False)])
def test_warn_and_ignore_store_the_object_without_the_field(
    sim: SimCluster, kubeconfig: Path, validate: str, warned: bool
) -> None:
    proc = run(kubeconfig, "create", "-f", "-", validate, stdin=json.dumps(with_unknown_field(POD, "lax")))
    assert proc.returncode == 0, proc.stderr
    assert ('Warning: unknown field "spec.foo"' in proc.stderr) is warned
    assert "foo" not in sim.store.get("pods", "lax", "default")["spec"], "unknown fields are dropped"


@pytest.mark.kubectl
def test_apply_a_list_and_reapply_it(sim: SimCluster, kubeconfig: Path) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": [POD, svc]})
    assert ok(kubeconfig, "apply", "-f", "-", stdin=doc).split() == [
        "pod/web-1", "created", "service/web", "created",
    ]  # fmt: skip
    again = run(kubeconfig, "apply", "-f", "-", stdin=doc)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["pod/web-1", "unchanged", "service/web", "unchanged"]
    assert again.stderr == "", "no warning: the stored objects have no unknown fields"


@pytest.mark.kubectl
def test_explain_reads_the_v3_schemas(kubeconfig: Path) -> None:
    out = ok(kubeconfig, "explain", "pod.spec.nodeName")
    assert "FIELD: nodeName <string>" in out and "NodeName indicates in which node" in out
    out = ok(kubeconfig, "explain", "deployments.spec.strategy")
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out


# -- the documents ---------------------------------------------------------------------------------
def test_openapi_v2_as_json_has_every_served_kind_and_its_operations(sim: SimCluster) -> None:
    code, headers, body = get(sim.url, "/openapi/v2", "application/json")
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    doc = json.loads(body)
    assert doc["swagger"] == "2.0" and doc["info"]["version"] == "v1.35.0"
    declared = {
        (g["group"], g["version"], g["kind"])
        for d in doc["definitions"].values()
        for g in d.get("x-kubernetes-group-version-kind", ())
    }
    for r in RESOURCES:
        kinds = {r.kind} if r.verbs == CREATE_ONLY else {r.kind, r.list_kind}  # reviews have no list
        assert {(r.group, r.version, k) for k in kinds} <= declared, r.key
    pod_patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert pod_patch["operationId"] == "patchCoreV1NamespacedPod"
    assert pod_patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert "application/strategic-merge-patch+json" in pod_patch["consumes"]
    assert {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": True} in pod_patch[
        "parameters"
    ]
    binding = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}" in doc["paths"]


def test_openapi_v2_negotiates_like_kube_openapi(sim: SimCluster) -> None:
    code, headers, body = get(sim.url, "/openapi/v2", PROTOBUF_ASKED)
    assert code == 200
    assert headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert body[:1] == b"\x0a" and body[2:5] == b"2.0", "field 1 (swagger) first, length-delimited"
    assert headers["ETag"] == '"' + hashlib.sha512(body).hexdigest().upper() + '"'
    assert get(sim.url, "/openapi/v2", "")[0] == 200
    code, _, body = get(sim.url, "/openapi/v2", "text/html")
    assert code == 406 and json.loads(body)["reason"] == "NotAcceptable"


def test_openapi_v3_documents_are_linked_by_the_hash_of_their_content(sim: SimCluster) -> None:
    _, _, body = get(sim.url, "/openapi/v3", "application/json")
    paths = json.loads(body)["paths"]
    assert set(paths) == {"api/v1", *(f"apis/{r.group}/{r.version}" for r in RESOURCES if r.group)}
    for gv, entry in paths.items():
        url = entry["serverRelativeURL"]
        code, _, doc_body = get(sim.url, url, "application/json")
        assert code == 200 and url.endswith("?hash=" + hashlib.sha512(doc_body).hexdigest().upper())
        doc = json.loads(doc_body)
        kinds = {
            g["kind"]
            for s in doc["components"]["schemas"].values()
            for g in s.get("x-kubernetes-group-version-kind", ())
            if f"apis/{g['group']}/{g['version']}" == gv or (gv == "api/v1" and not g["group"])
        }
        served = {r.kind for r in RESOURCES if (f"apis/{r.group}/{r.version}" if r.group else "api/v1") == gv}
        assert served <= kinds, gv
    pod = json.loads(get(sim.url, paths["api/v1"]["serverRelativeURL"], "")[2])["components"]["schemas"][
        "io.k8s.api.core.v1.Pod"
    ]
    assert pod["properties"]["spec"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}],
        "description": pod["properties"]["spec"]["description"],
    }


def test_vendored_definitions_are_what_the_generator_writes() -> None:
    raw = resources.files("ksched.sim").joinpath("openapi-definitions.json.gz").read_bytes()
    vendored = json.loads(gzip.decompress(raw))
    assert vendored["kubernetesVersion"] == openapi_gen.KUBERNETES_VERSION
    fresh = openapi_gen.trimmed(openapi_gen.source(openapi_gen.KUBERNETES_VERSION))
    assert vendored["definitions"] == fresh, "run: python -m ksched.sim.openapi_gen"


# -- server-side rules kubectl create relies on ------------------------------------------------------
def test_create_refuses_a_resource_version_as_etcd3_storage_does(sim: SimCluster) -> None:
    body = {**POD, "metadata": {"name": "rv", "resourceVersion": "5"}}
    code, _, status = request(sim.url, "POST", "/api/v1/namespaces/default/pods", json.dumps(body))
    assert code == 500 and status["message"] == "resourceVersion should not be set on objects to be created"


def test_an_unsupported_field_validation_value_is_invalid(sim: SimCluster) -> None:
    path = "/api/v1/namespaces/default/pods?fieldValidation=Loud"
    code, _, status = request(sim.url, "POST", path, json.dumps(POD))
    assert code == 422
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": '
        'supported values: "Ignore", "Strict", "Warn"'
    )


def test_unknown_fields_in_a_patch_are_warned_about_and_dropped(sim: SimCluster) -> None:
    path = "/api/v1/nodes/node-0"
    patch = json.dumps({"metadata": {"labels": {"a": "b"}}, "spec": {"foo": 1}})
    code, headers, node = request(sim.url, "PATCH", path, patch, "application/merge-patch+json")
    assert code == 200 and headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'
    assert "foo" not in node["spec"] and node["metadata"]["labels"]["a"] == "b"


def test_strict_patches_are_refused_on_the_patch_field(sim: SimCluster) -> None:
    """``handlers/patch.go``: the patch (strategic) or the patched object (merge) is the value."""
    path, unknown = (
        "/api/v1/nodes/node-0?fieldValidation=Strict",
        'strict decoding error: unknown field "spec.foo"',
    )
    patch = json.dumps({"spec": {"foo": 1, "unschedulable": True}})
    code, _, status = request(sim.url, "PATCH", path, patch, "application/strategic-merge-patch+json")
    assert code == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        f' "" is invalid: patch: Invalid value: "map[spec:map[foo:1 unschedulable:true]]": {unknown}'
    )
    assert status["details"]["causes"][0]["field"] == "patch"
    code, _, status = request(sim.url, "PATCH", path, patch, "application/merge-patch+json")
    assert code == 422 and status["message"].startswith(
        ' "" is invalid: patch: Invalid value: "{\\"apiVersion'
    )
    assert status["message"].endswith(f'": {unknown}')
    assert "unschedulable" not in sim.store.get("nodes", "node-0")["spec"], "nothing was written"


def test_protobuf_wire_format_of_gnostic_schemas() -> None:
    """Field numbers of gnostic's ``OpenAPIv2.proto``: Schema._ref = 1, type = 22 (a TypeItem whose
    value = 1), vendor_extension = 31 (NamedAny: name = 1, value = 2; Any.yaml = 2)."""
    assert pb.schema({"$ref": "#/definitions/X"}) == b"\x0a\x0f#/definitions/X"
    assert pb.schema({"type": "string"}) == b"\xb2\x01\x08\x0a\x06string"
    assert pb.schema({"x-k": "v"}) == b'\xfa\x01\x0c\x0a\x03x-k\x12\x05\x12\x03"v"'
    with pytest.raises(ValueError, match="no protobuf field for 'patternProperties'"):
        pb.schema({"patternProperties": {}})
