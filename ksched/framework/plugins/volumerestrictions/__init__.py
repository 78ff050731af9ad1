"""VolumeRestrictions: inline disk conflicts on the node and ReadWriteOncePod claims in the cluster.

Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``.
"""

from ksched.framework.plugins.volumerestrictions.plugin import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    NAME,
    VolumeRestrictions,
    new,
)

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "NAME",
    "VolumeRestrictions",
    "new",
]
