"""DefaultPreemption (PostFilter, PreEnqueue): evict lower-priority pods to make room for a pod that
fits nowhere. See :mod:`.plugin`."""

from __future__ import annotations

from typing import Any

from ksched.config.types import DefaultPreemptionArgs
from ksched.framework.api import Handle
from ksched.framework.plugins.defaultpreemption.plugin import (
    ERR_NOT_HELPFUL,
    ERR_POLICY_NEVER,
    ERR_TERMINATING_ON_NOMINATED,
    ERR_WAITING,
    NAME,
    DefaultPreemption,
)


def new(args: Any, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args if isinstance(args, DefaultPreemptionArgs) else None, handle)


__all__ = [
    "ERR_NOT_HELPFUL",
    "ERR_POLICY_NEVER",
    "ERR_TERMINATING_ON_NOMINATED",
    "ERR_WAITING",
    "NAME",
    "DefaultPreemption",
    "new",
]
