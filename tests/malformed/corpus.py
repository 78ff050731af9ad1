"""Reading ``tests/corpus/*.yaml``: object entries to POST, config entries to load, bomb recipes.

The files are data (README.md there describes every one); this module turns an entry into what a
check needs: the request (path, body bytes), what the API server must answer, and whether the entry
is ``ready`` (the server refuses it already). Big values are written as recipes and expanded here,
so a megabyte label value costs a line in the file:

- ``{$repeat: TEXT, times: N}`` -> TEXT repeated N times;
- ``{$list: ITEM, times: N}`` -> N copies of ITEM, ``{i}`` in its strings replaced by the index;
- ``{$entry: [KEY, VALUE]}`` -> a one-entry mapping whose key may itself be a recipe.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ksched.sim._resources import RESOURCES, ResourceType

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BOMB_KINDS = frozenset({"alias_bomb", "deep", "oversized"})


@dataclass(frozen=True)
class ObjectEntry:
    """One object to create, and the answer the API server must give."""

    file: str
    id: str
    kind: str
    body: bytes
    namespace: str
    field: str | None
    """The field path the refusal names ("" for a 400 that names none); None for an accepted one."""
    code: int | None
    """The status expected; None: any 4xx."""
    query: str = ""
    ready: bool = True
    obj: Any = None
    """The decoded object (None for a ``raw`` body)."""

    @property
    def accept(self) -> bool:
        return self.code is not None and 200 <= self.code < 300

    @property
    def path(self) -> str:
        rtype = resource_for(self.kind, self.obj)
        base = "/api/v1" if not rtype.group else f"/apis/{rtype.group}/{rtype.version}"
        ns = f"/namespaces/{self.namespace}" if rtype.namespaced else ""
        return f"{base}{ns}/{rtype.plural}" + (f"?{self.query}" if self.query else "")


@dataclass(frozen=True)
class ConfigEntry:
    """A KubeSchedulerConfiguration fragment the loader must refuse with ``expect`` in its message."""

    file: str
    id: str
    config: dict[str, Any]
    expect: str
    ready: bool = True


@dataclass(frozen=True)
class BombRecipe:
    """A hostile file to generate (:func:`tests.malformed.gen.bomb_text`) and the refusal expected."""

    file: str
    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    expect: str = ""
    ready: bool = True


Entry = ObjectEntry | ConfigEntry | BombRecipe


def resource_for(kind: str, obj: Any = None) -> ResourceType:
    """The served resource of ``kind``, in the object's API group when it says one."""
    api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
    matches = [r for r in RESOURCES if r.kind == kind]
    for r in matches:
        if r.api_version == api_version:
            return r
    if not matches:
        raise KeyError(f"the embedded cluster serves no kind {kind!r}")
    return matches[0]


def expand(value: Any) -> Any:
    """``value`` with every recipe (module docstring) expanded, recursively."""
    if isinstance(value, list):
        return [expand(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$repeat" in value:
        return str(value["$repeat"]) * int(value["times"])
    if "$list" in value:
        item = value["$list"]
        return [expand(_number(item, i)) for i in range(int(value["times"]))]
    if "$entry" in value:
        key, item = value["$entry"]
        return {expand(key): expand(item)}
    return {k: expand(v) for k, v in value.items()}


def _number(item: Any, i: int) -> Any:
    if isinstance(item, str):
        return item.replace("{i}", str(i))
    if isinstance(item, list):
        return [_number(v, i) for v in item]
    if isinstance(item, dict):
        return {_number(k, i): _number(v, i) for k, v in item.items()}
    return item


def parse(file: str, raw: dict[str, Any]) -> Entry:
    """One entry of ``file``; raises ValueError naming it when its shape is none of README.md's."""
    ready = bool(raw.get("ready", True))
    if raw.get("kind") in BOMB_KINDS:
        return BombRecipe(
            file,
            str(raw["name"]),
            raw["kind"],
            dict(raw.get("params") or {}),
            str(raw.get("expect") or ""),
            ready,
        )
    name = str(raw.get("id") or raw.get("name") or "")
    if "config" in raw:
        return ConfigEntry(file, name, dict(raw["config"]), str(raw.get("expect") or ""), ready)
    if "object" not in raw and "raw" not in raw:
        raise ValueError(f"{file}: entry {name or raw!r} has neither object, raw, config nor a bomb kind")
    obj = expand(raw["object"]) if "object" in raw else None
    body = str(raw["raw"]).encode() if "raw" in raw else json.dumps(obj, ensure_ascii=False).encode()
    kind = str(raw.get("kind") or (obj or {}).get("kind"))
    code = raw.get("code")
    fld = raw.get("field")
    accept = code is not None and 200 <= int(code) < 300
    return ObjectEntry(
        file,
        name or f"{kind}-{len(body)}",
        kind,
        body,
        str(raw.get("namespace") or "default"),
        None if accept else str(fld or ""),
        None if code is None else int(code),
        str(raw.get("query") or ""),
        ready,
        obj,
    )


def corpus_files(directory: Path = CORPUS) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def load(paths: Iterable[Path] | None = None) -> list[Entry]:
    """Every entry of every corpus file (all of them by default), in file order."""
    out: list[Entry] = []
    for path in corpus_files() if paths is None else paths:
        for raw in yaml.safe_load(path.read_text()) or ():
            out.append(parse(path.name, raw))
    return out


def objects(entries: Iterable[Entry], *, ready_only: bool = False) -> list[ObjectEntry]:
    return [e for e in entries if isinstance(e, ObjectEntry) and (e.ready or not ready_only)]
