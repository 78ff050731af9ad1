"""Non-resource endpoints: discovery documents, /version and health checks."""

from __future__ import annotations

from typing import Any

from ksched.sim import _resources as res


def version_doc(git_version: str) -> dict[str, Any]:
    """``GET /version`` in kube-apiserver's shape."""
    core = git_version.lstrip("v").split("-")[0].split(".")
    return {
        "major": core[0],
        "minor": core[1] if len(core) > 1 else "0",
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "ksched",
        "platform": "linux/amd64",
    }


def discovery(parts: list[str], server_address: str) -> dict[str, Any] | None:
    """The document for a discovery path split on ``/``, or ``None`` if it is not one."""
    if parts == ["api"]:
        return res.api_versions(server_address)
    if parts == ["api", "v1"]:
        return res.resource_list("", "v1")
    if parts == ["apis"]:
        return res.group_list()
    if len(parts) == 2 and parts[0] == "apis":
        return res.group(parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return res.resource_list(parts[1], parts[2])
    return None


_OPENAPI_HASH = "6b73636865642d73696d000000000000000000000000000000000000000000000000"[:64]


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_v3(parts: list[str]) -> dict[str, Any] | None:
    """A minimal OpenAPI v3 discovery: ``/openapi/v3`` and one document per group/version.

    It only declares, for each resource's PATCH operation, the ``fieldValidation`` query parameter
    and ``x-kubernetes-group-version-kind``. That is what kubectl (create/apply with the default
    ``--validate=strict``) checks to hand validation to the server instead of downloading schemas;
    with no schemas, ``kubectl apply`` computes strategic merge patches from its compiled-in types.
    """
    gvs = sorted({(r.group, r.version) for r in res.RESOURCES})
    if parts == ["openapi", "v3"]:
        return {
            "paths": {
                _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash={_OPENAPI_HASH}"}
                for g, v in gvs
            }
        }
    rel = "/".join(parts[2:])
    match = [(g, v) for g, v in gvs if _gv_path(g, v) == rel]
    if parts[:2] != ["openapi", "v3"] or not match:
        return None
    group, version = match[0]
    paths: dict[str, Any] = {}
    for r in res.RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        base = "/" + _gv_path(group, version)
        item = (
            f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}"
            if r.namespaced
            else f"{base}/{r.plural}/{{name}}"
        )
        paths[item] = {
            "patch": {
                "operationId": f"patch{r.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.kind},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
