"""Reading Kubernetes manifests from files: JSON or YAML, one object, several documents, or a List.

``kubectl get ... -o yaml`` writes one ``kind: List`` whose ``items`` are the objects;
hand-written files are often several YAML documents. Both come out as a flat list of dicts.
JSON (what ``-o json`` writes) is decoded with orjson, which matters for large cluster dumps:
PyYAML needs seconds for what orjson reads in a fraction of one.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import yaml

from ksched.bounded import CLUSTER_LIMIT, LimitError, load_json, load_yaml_all, preview, read_bytes
from ksched.errors import ManifestError


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Decoding a 50,000-pod dump creates millions of dicts and lists, none of them garbage, and every
    generation-0 pass of the collector would walk all of them again, so a paused collector decodes
    several times faster. Reference counting still frees everything; collection resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _flatten(doc: Any, source: str, index: int) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: document {index + 1} is not an object (got {type(doc).__name__})")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(f"{source}: document {index + 1}: items is not a list")
        for j, item in enumerate(items):
            if not isinstance(item, dict):
                raise ManifestError(f"{source}: items[{j}] is not an object (got {type(item).__name__})")
            yield item
    else:
        yield doc


def parse_manifests(text: str | bytes, source: str = "<input>") -> list[dict[str, Any]]:
    """Every object in ``text`` (JSON or YAML), with Lists flattened into their items; within
    :mod:`ksched.bounded`'s depth and alias limits."""
    stripped = text.lstrip()[:1]
    try:
        if stripped in ("{", "[", b"{", b"["):
            try:
                data = load_json(text, source)
            except orjson.JSONDecodeError:
                pass  # YAML is a superset of JSON; let the YAML parser say what is wrong
            else:
                docs = data if isinstance(data, list) else [data]
                return [obj for i, d in enumerate(docs) for obj in _flatten(d, source, i)]
        docs = load_yaml_all(text, source)
    except LimitError as exc:
        raise ManifestError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"{source}: not valid YAML or JSON{where}: {preview(problem)}") from exc
    except ValueError as exc:  # an integer literal past Python's 4,300-digit conversion limit
        raise ManifestError(f"{source}: not valid YAML or JSON: {preview(str(exc))}") from exc
    return [obj for i, d in enumerate(docs) for obj in _flatten(d, source, i)]


def read_manifests(
    path: str | os.PathLike[str], limit: int = CLUSTER_LIMIT, what: str = "a cluster file"
) -> list[dict[str, Any]]:
    """Objects in the file at ``path``; a missing, unreadable or oversized file (over ``limit``
    bytes, refused before it is read) is a :class:`ManifestError`."""
    p = Path(path)
    try:
        data = read_bytes(p, limit, what)
    except LimitError as exc:
        raise ManifestError(str(exc)) from None
    except OSError as exc:
        raise ManifestError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        text: str | bytes = data if data.lstrip()[:1] in (b"{", b"[") else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{p}: not UTF-8 text") from exc
    return parse_manifests(text, str(p))


def kind_of(obj: dict[str, Any]) -> str:
    kind = obj.get("kind")
    return kind if isinstance(kind, str) else ""
