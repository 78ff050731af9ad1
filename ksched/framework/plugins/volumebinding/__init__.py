"""VolumeBinding: binds a pod's PersistentVolumeClaims to PersistentVolumes (or has them provisioned)
as part of scheduling it, and filters out the nodes where that is impossible.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/`` (``volume_binding.go``, ``binder.go``),
``k8s.io/component-helpers/storage/volume`` (``pv_helpers.go``, ``helpers.go``),
``k8s.io/component-helpers/storage/ephemeral`` and, for in-tree PVs, csi-translation-lib.
"""

from ksched.framework.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
)
from ksched.framework.plugins.volumebinding.plugin import EVENTS, HINTS, NAME, StateData, VolumeBinding, new

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "EVENTS",
    "HINTS",
    "NAME",
    "StateData",
    "VolumeBinding",
    "new",
]
