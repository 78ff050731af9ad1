"""Non-resource endpoints: discovery documents, /version and the OpenAPI v3 documents."""

from __future__ import annotations

from typing import Any

from ksched.sim import _openapi_v3
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


def openapi_v3(parts: list[str]) -> dict[str, Any] | bytes | None:
    """``/openapi/v3`` (a dict) or one group/version's document (JSON bytes, built once and kept);
    ``None`` if the path is neither. See :mod:`ksched.sim._openapi_v3`."""
    if parts == ["openapi", "v3"]:
        return _openapi_v3.discovery()
    if parts[:2] != ["openapi", "v3"]:
        return None
    return _openapi_v3.document("/".join(parts[2:]))
