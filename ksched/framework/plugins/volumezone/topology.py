"""The topology labels VolumeZone reads on PVs and nodes (upstream ``topologyLabels``,
``translateToGALabel``, ``getPVTopologies``; ``volumehelpers.LabelZonesToSet``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ksched.model.storage import PersistentVolume

BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
ZONE: Final = "topology.kubernetes.io/zone"
REGION: Final = "topology.kubernetes.io/region"
TOPOLOGY_LABELS: Final = (BETA_ZONE, BETA_REGION, ZONE, REGION)
"""Upstream ``topologyLabels``, in its order."""
GA_LABEL: Final[Mapping[str, str]] = {BETA_ZONE: ZONE, BETA_REGION: REGION, ZONE: ZONE, REGION: REGION}
"""Upstream ``translateToGALabel``."""
MULTI_ZONE_DELIMITER: Final = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of one PV: upstream ``pvTopology``."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: the ``__``-separated zones, trimmed; None (upstream's
    error) when one of them is empty."""
    zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """Upstream ``getPVTopologies``: the PV's topology labels in :data:`TOPOLOGY_LABELS` order; a
    label whose value does not parse is ignored."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        values = label_zones_to_set(value)
        if values is not None:
            out.append(PVTopology(pv.name, key, values))
    return out


__all__ = ["GA_LABEL", "TOPOLOGY_LABELS", "PVTopology", "label_zones_to_set", "pv_topologies"]
