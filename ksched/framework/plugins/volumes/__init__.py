"""VolumeRestrictions, NodeVolumeLimits and VolumeZone (VolumeBinding is ``plugins/volumebinding``).

Upstream skips all three for a pod that mounts no PersistentVolumeClaim (and no generic ephemeral
volume), which is every pod ksched can place today: it does not watch PVs, PVCs, StorageClasses or
CSINodes yet. A pod that does use claims gets an explicit error naming the claim instead of a
decision made without the data (upstream would look the claim up).
"""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import (
    SKIP,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Status,
)
from ksched.model.pod import Pod

UNSUPPORTED: Final = "ksched does not evaluate PersistentVolumeClaims yet: pod uses claim(s) [{claims}]"


class VolumePlugin:
    """One of the three volume plugins: Skip without claims, an error with them."""

    skips_pods_without = "volume_claims"
    """PreFilter skips pods without claims; the runtime then need not call it (``PodGatedPlugin``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.volume_claims:
            return None, SKIP
        return None, Status(Code.ERROR, (UNSUPPORTED.format(claims=" ".join(pod.volume_claims)),))

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        return FilterResult.all_pass()


def new_volume_restrictions(args: Any, handle: Handle) -> VolumePlugin:
    return VolumePlugin(names.VOLUME_RESTRICTIONS)


def new_node_volume_limits(args: Any, handle: Handle) -> VolumePlugin:
    return VolumePlugin(names.NODE_VOLUME_LIMITS)


def new_volume_zone(args: Any, handle: Handle) -> VolumePlugin:
    return VolumePlugin(names.VOLUME_ZONE)
