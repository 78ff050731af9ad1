"""NodeVolumeLimits: the CSI volumes attached to a node stay within its CSINode's per-driver limits.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` and ``utils.go``.
"""

from ksched.framework.plugins.nodevolumelimits.plugin import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NAME,
    NodeVolumeLimits,
    VolumeCountError,
    new,
)

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NAME", "NodeVolumeLimits", "VolumeCountError", "new"]
