"""``metadata.managedFields`` as kube-apiserver's field manager records them on every write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ksched.sim._resources import ResourceType


def field_manager(user_agent: str, query: Mapping[str, str]) -> str:
    """The manager a request writes as: ``fieldManager``, else the user agent's first word."""
    return query.get("fieldManager") or user_agent.split("/", 1)[0]


def record(
    rtype: ResourceType,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    manager: str | None,
    subresource: str,
    now: str,
) -> None:
    """Set ``obj.metadata.managedFields`` for this write (``old`` is the replaced object)."""
