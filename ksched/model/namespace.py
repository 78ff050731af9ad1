"""Compact Namespace records built from raw API JSON.

The scheduler needs a namespace's labels for ``namespaceSelector`` in inter-pod (anti-)affinity and
topology spread terms; nothing else of the object is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f


@dataclass(frozen=True, slots=True)
class Namespace:
    """One namespace: its name and labels. Immutable: an update builds a new record."""

    name: str
    labels: Mapping[str, str]
    uid: str = ""

    @property
    def described(self) -> str:
        return describe_object("Namespace", None, self.name)


def namespace_from_dict(raw: Any) -> Namespace:
    """Build a :class:`Namespace` from API JSON; raise :class:`ObjectError` naming the bad field."""
    top = f.mapping(raw, "Namespace", "")
    meta = f.mapping(top.get("metadata"), "Namespace", "metadata")
    name = f.string(meta.get("name"), "Namespace", "metadata.name")
    obj = describe_object("Namespace", None, name)
    if not name:
        raise ObjectError(obj, "metadata.name", "a namespace needs a name")
    return Namespace(
        name=name,
        labels=f.string_map(meta.get("labels"), obj, "metadata.labels"),
        uid=f.string(meta.get("uid"), obj, "metadata.uid"),
    )
