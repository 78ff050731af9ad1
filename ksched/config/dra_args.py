"""DynamicResourcesArgs: decoded strictly, and refused where ksched cannot honour a value.

Upstream (``validation_pluginargs.go``): ``filterTimeout`` must not be negative; ``bindingTimeout``
is forbidden unless the DRADeviceBindingConditions and DRAResourceClaimDeviceStatus gates are on
(they are off, and ksched implements them off). ksched's Filter has no timer: 0s (no bound) is
exactly what it does, and upstream's default 10s is accepted because every default configuration
carries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ksched.config import _decode as d
from ksched.config.types import DynamicResourcesArgs
from ksched.errors import ConfigError

_FIELDS = ("apiVersion", "kind", "filterTimeout", "bindingTimeout")
DEFAULT_FILTER_TIMEOUT_S = 10.0


def dynamic_resources(raw: Mapping[str, Any], path: str, errs: list[ConfigError]) -> DynamicResourcesArgs:
    d.mapping(raw, path, _FIELDS)
    timeout = d.duration(raw, "filterTimeout", path, DEFAULT_FILTER_TIMEOUT_S)
    where = d.child(path, "filterTimeout")
    if timeout < 0:
        errs.append(
            ConfigError(where, f"invalid value {d.quote(raw.get('filterTimeout'))}: must be zero or positive")
        )
    elif timeout not in (0.0, DEFAULT_FILTER_TIMEOUT_S):
        errs.append(
            ConfigError(
                where,
                f"invalid value {d.quote(raw.get('filterTimeout'))}: ksched's DynamicResources Filter has no "
                "timer; use 0s (no bound) or upstream's default 10s",
            )
        )
    if raw.get("bindingTimeout") is not None:
        errs.append(
            ConfigError(
                d.child(path, "bindingTimeout"),
                "Forbidden: requires feature gates DRADeviceBindingConditions and "
                "DRAResourceClaimDeviceStatus to be enabled",
            )
        )
    return DynamicResourcesArgs(filter_timeout_s=timeout)
