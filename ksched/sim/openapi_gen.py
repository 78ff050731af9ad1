"""Regenerate ``ksched/sim/openapi-definitions.json.gz``: ``python -m ksched.sim.openapi_gen``.

The sim serves OpenAPI schemas (``/openapi/v2``, ``/openapi/v3``) so that kubectl validates what it
sends as against kube-apiserver. The schemas are upstream's, for the Kubernetes version the sim
answers as, not written here: the ``kubernetes-validate`` package (a test dependency) ships
upstream's swagger definitions per release, converted to JSON Schema. This script turns them back
into Swagger 2.0 definitions (the shape kube-apiserver publishes), keeps the kinds the sim serves
(:data:`ksched.sim._resources.RESOURCES`, their lists, and the meta types its operations name) with
everything they reference, and writes them compressed next to this file. Only this script needs
``kubernetes-validate``; the sim reads the file it writes.

The conversion undoes what the JSON Schema converter added: ``"type": [T, "null"]`` is ``T``;
``Quantity`` and ``IntOrString`` (``oneOf`` string or number) are ``string`` (``format:
int-or-string`` for the latter) as upstream publishes them; ``$ref`` points at ``#/definitions/``;
the ``enum`` pinned on each kind's ``apiVersion`` and ``kind`` properties is dropped.
"""

from __future__ import annotations

import gzip
import importlib.resources
import sys
from pathlib import Path
from typing import Any

import orjson

from ksched.sim import _resources as res

KUBERNETES_VERSION = "1.35.0"
OUTPUT = Path(__file__).with_name("openapi-definitions.json.gz")

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
EXTRA = (_META + "Status", _META + "DeleteOptions", _META + "WatchEvent", _META + "Patch")
"""Definitions the served operations name besides the kinds: error bodies, delete bodies, patches."""

_NULLABLE_OF = {frozenset({"string", "integer"}): "int-or-string", frozenset({"string", "number"}): ""}


def source(version: str) -> dict[str, Any]:
    """kubernetes-validate's definitions for ``version`` (JSON Schema, by definition name)."""
    root = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    path = root / f"v{version}-local" / "_definitions.json"
    if not path.is_file():
        sys.exit(f"kubernetes-validate ships no schemas for {version} (looked for {path}); upgrade it")
    doc = orjson.loads(path.read_bytes())
    defs = doc.get("$defs")
    if not isinstance(defs, dict):
        sys.exit(f"{path} has no $defs: not the kubernetes-validate layout this script reads")
    return defs


def _swagger(node: Any) -> Any:
    """One JSON Schema node (and its children) as Swagger 2.0."""
    if isinstance(node, list):
        return [_swagger(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = value.replace("#/$defs/", "#/definitions/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) != 1:
                raise ValueError(f"type {value!r} has more than one non-null type")
            out[key] = types[0]
        elif key == "oneOf":
            types = frozenset(t for alt in value for t in alt.get("type", ()) if t != "null")
            if types not in _NULLABLE_OF:
                raise ValueError(f"oneOf {value!r} is not a string-or-number scalar")
            out["type"] = "string"
            if _NULLABLE_OF[types]:
                out["format"] = _NULLABLE_OF[types]
        elif key in ("properties", "x-kubernetes-group-version-kind", "required", "enum"):
            out[key] = value if key != "properties" else {k: _swagger(v) for k, v in value.items()}
        else:
            out[key] = _swagger(value)
    if "x-kubernetes-group-version-kind" in out:
        for name in ("apiVersion", "kind"):
            out.get("properties", {}).get(name, {}).pop("enum", None)
    return out


def _refs(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            into.add(ref.rsplit("/", 1)[-1])
        for value in node.values():
            _refs(value, into)
    elif isinstance(node, list):
        for value in node:
            _refs(value, into)


def _roots(defs: dict[str, Any]) -> set[str]:
    """The definitions of every served kind, its list and its subresources' kinds."""
    wanted = set()
    for r in res.RESOURCES:
        wanted.add((r.group, r.version, r.kind))
        if r.verbs != res.CREATE_ONLY:  # review kinds have no list type upstream
            wanted.add((r.group, r.version, r.list_kind))
        for kind in r.subresources.values():
            wanted.add(("policy", "v1", kind) if kind == "Eviction" else (r.group, r.version, kind))
    found: dict[tuple[str, str, str], str] = {}
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            key = (gvk["group"], gvk["version"], gvk["kind"])
            if key in wanted:
                found[key] = name
    missing = sorted(wanted - set(found))
    if missing:
        sys.exit(f"no upstream definition for {missing}")
    return set(found.values()) | set(EXTRA)


def trimmed(defs: dict[str, Any]) -> dict[str, Any]:
    """The served roots and their reference closure, as Swagger 2.0 definitions."""
    todo, keep = list(_roots(defs)), set()
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        refs: set[str] = set()
        _refs(defs[name], refs)
        todo.extend(refs - keep)
    return {name: _swagger(defs[name]) for name in sorted(keep)}


def main() -> None:
    defs = trimmed(source(KUBERNETES_VERSION))
    doc = {"kubernetesVersion": KUBERNETES_VERSION, "definitions": defs}
    body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    OUTPUT.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    print(f"wrote {OUTPUT} ({len(defs)} definitions, {OUTPUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
