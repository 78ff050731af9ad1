"""VolumeZone: a pod's bound PersistentVolumes must be in the node's zone and region.

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``.
"""

from ksched.framework.plugins.volumezone.plugin import ERR_REASON_CONFLICT, NAME, VolumeZone, new
from ksched.framework.plugins.volumezone.topology import PVTopology, label_zones_to_set, pv_topologies

__all__ = [
    "ERR_REASON_CONFLICT",
    "NAME",
    "PVTopology",
    "VolumeZone",
    "label_zones_to_set",
    "new",
    "pv_topologies",
]
