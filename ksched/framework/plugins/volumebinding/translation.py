"""The node affinity of an in-tree PV once translated to CSI (upstream ``tryTranslatePVToCSI``).

The binder checks a bound in-tree PV against a node through its CSI translation when the PV's
plugin is migrated (``isCSIMigrationOnForPlugin``: AWS EBS, GCE PD, Azure Disk, Cinder, Portworx in
v1.35) *and* the node's CSINode lists the plugin in ``storage.alpha.kubernetes.io/migrated-plugins``.
Only the node affinity matters to the scheduler; csi-translation-lib rewrites it with
``translateTopologyFromInTreeToCSI`` (``plugins/in_tree_volume.go``):

- the zone key is the GA one if an expression uses it, else the beta one if an expression uses it,
  else whichever the PV's labels carry (GA first), else GA;
- expressions on that zone key are renamed to the driver's topology key; when there are none and
  the PV's labels carry the zone, ``driverKey In <zones>`` (``__``-separated, trimmed, sorted,
  de-duplicated) is appended to every term (one term is made when there are none);
- expressions on the beta region key are renamed to the GA region key.

Portworx has no topology to translate. The GCE PD translator fails for a multi-zone label whose
zones do not name one region (``getRegionFromZones``), which the binder reports as an error;
other translators' errors come from malformed volume IDs, which ksched does not reproduce.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ksched.model.selectors import NodeSelectorTerm, Requirement
from ksched.model.storage import CSINode, PersistentVolume
from ksched.model.volumes import AWS_EBS, AZURE_DISK, CINDER, GCE_PD, MIGRATION_ON

ZONE_GA: Final = "topology.kubernetes.io/zone"
ZONE_BETA: Final = "failure-domain.beta.kubernetes.io/zone"
REGION_GA: Final = "topology.kubernetes.io/region"
REGION_BETA: Final = "failure-domain.beta.kubernetes.io/region"
MULTI_ZONE_DELIMITER: Final = "__"
TOPOLOGY_KEY: Final[Mapping[str, str]] = {
    GCE_PD: "topology.gke.io/zone",
    AWS_EBS: "topology.ebs.csi.aws.com/zone",
    AZURE_DISK: "topology.disk.csi.azure.com/zone",
    CINDER: "topology.cinder.csi.openstack.org/zone",
}
"""The CSI driver's zone topology key per in-tree plugin (csi-translation-lib's ``*TopologyKey``)."""


class TranslationError(Exception):
    """csi-translation-lib refused the PV; the message is upstream's ``could not translate pv: ...``."""


def migrating_plugin(pv: PersistentVolume) -> str | None:
    """The PV's in-tree plugin when its CSI migration is on, else None (nothing to translate)."""
    src = pv.in_tree
    if src is None or src.plugin not in MIGRATION_ON:
        return None
    return src.plugin


def migrated_on(csi_node: CSINode | None, plugin: str) -> bool:
    """``isPluginMigratedToCSIOnNode``: the node's CSINode lists the plugin as migrated."""
    return csi_node is not None and csi_node.migrated(plugin)


def go_string_set(values: set[str]) -> str:
    """How Go's ``%v`` prints a ``sets.String``: ``map[a:{} b:{}]``, keys sorted."""
    return "map[" + " ".join(f"{v}:{{}}" for v in sorted(values)) + "]"


def _region_from_zones(zones: list[str]) -> str:
    """csi-translation-lib's GCE ``getRegionFromZones`` (raises with its messages)."""
    if not zones:
        raise TranslationError("could not translate pv: failed to get region from zones: no zones specified")
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                "could not translate pv: failed to get region from zones: zone in unexpected format, "
                f"expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(
            "could not translate pv: failed to get region from zones: multiple or no regions gotten "
            f"from zones, got: {go_string_set(regions)}"
        )
    return regions.pop()


def _keys_used(terms: tuple[NodeSelectorTerm, ...] | None, key: str) -> bool:
    """``TopologyKeyExist``: some expression of some term has ``key``."""
    return terms is not None and any(r.key == key for t in terms for r in t.match_expressions)


def _values_of(terms: tuple[NodeSelectorTerm, ...] | None, key: str) -> bool:
    """Whether ``getTopologyValues`` finds any value for ``key`` in the terms' expressions."""
    return terms is not None and any(r.values for t in terms for r in t.match_expressions if r.key == key)


def _zone_labels(pv: PersistentVolume) -> tuple[str, str]:
    """``getTopologyLabel``: (zone key, region key) the PV uses."""
    terms = pv.node_affinity
    if _keys_used(terms, ZONE_GA):
        return ZONE_GA, REGION_GA
    if _keys_used(terms, ZONE_BETA):
        return ZONE_BETA, REGION_BETA
    if ZONE_GA in pv.labels:
        return ZONE_GA, REGION_GA
    if ZONE_BETA in pv.labels:
        return ZONE_BETA, REGION_BETA
    return ZONE_GA, REGION_GA


def _rename(terms: tuple[NodeSelectorTerm, ...], old: str, new: str) -> tuple[NodeSelectorTerm, ...]:
    return tuple(
        NodeSelectorTerm(
            tuple(Requirement(new, r.operator, r.values) if r.key == old else r for r in t.match_expressions),
            t.match_fields,
        )
        for t in terms
    )


def translated_affinity(pv: PersistentVolume) -> tuple[NodeSelectorTerm, ...] | None:
    """The required node-affinity terms of the PV's CSI translation (the PV must be migrating).

    Raises :class:`TranslationError` where csi-translation-lib fails.
    """
    plugin = migrating_plugin(pv)
    if plugin == GCE_PD:
        zones_label = pv.labels.get(ZONE_BETA) or pv.labels.get(ZONE_GA, "")
        zones = zones_label.split(MULTI_ZONE_DELIMITER)
        if len(zones) > 1:
            _region_from_zones(zones)
    key = TOPOLOGY_KEY.get(plugin or "")
    terms = pv.node_affinity
    if key is None:
        return terms
    zone_key, region_key = _zone_labels(pv)
    if _values_of(terms, zone_key):
        assert terms is not None
        terms = _rename(terms, zone_key, key)
    elif zone_key in pv.labels:
        wanted = sorted({z.strip() for z in pv.labels[zone_key].split(MULTI_ZONE_DELIMITER) if z.strip()})
        if wanted:
            req = Requirement(key, "In", tuple(wanted))
            base = terms if terms else (NodeSelectorTerm((), ()),)
            terms = tuple(NodeSelectorTerm((*t.match_expressions, req), t.match_fields) for t in base)
    if region_key == REGION_BETA and _values_of(terms, REGION_BETA):
        assert terms is not None
        terms = _rename(terms, REGION_BETA, REGION_GA)
    return terms


def effective_affinity(pv: PersistentVolume, csi_node: CSINode | None) -> tuple[NodeSelectorTerm, ...] | None:
    """The terms the binder checks on one node: translated when the node migrated the plugin."""
    plugin = migrating_plugin(pv)
    if plugin is not None and migrated_on(csi_node, plugin):
        return translated_affinity(pv)
    return pv.node_affinity
