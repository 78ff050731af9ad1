"""ObjectMeta validation for every kind (names by kind, labels, annotations, ownerReferences...)."""

from __future__ import annotations

from typing import Any

from ksched.sim._resources import ResourceType
from ksched.sim._storage_validation import Errors


def validate(errs: Errors, rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Add ``obj.metadata``'s errors (and, on update, immutable-field errors against ``old``)."""
