"""The PV/PVC helpers VolumeBinding uses: upstream pv_helpers_test.go's TestFindMatchVolumeWithNode
and TestDelayBindingMode as data, GetBindVolumeToClaim, CheckNodeAffinity on a nameless node, and
csi-translation-lib's node-affinity translation of in-tree PVs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from ksched.cache.volumes import VolumeStore
from ksched.framework.plugins.volumebinding.binder import BinderError, _is_delay_binding
from ksched.framework.plugins.volumebinding.matching import (
    bind_volume_to_claim,
    find_matching_volume,
    node_affinity_matches,
    with_selected_node,
)
from ksched.framework.plugins.volumebinding.translation import (
    TranslationError,
    effective_affinity,
    translated_affinity,
)
from ksched.model.selectors import NodeSelectorTerm, Requirement
from ksched.model.storage import csi_node_from_dict, pv_from_dict, pvc_from_dict, storage_class_from_dict
from tests.storage_builders import affinity_terms, make_csi_node, make_pv, make_pvc, make_storage_class


def volume(uid: str, name: str, capacity: str, available: bool, **kw: Any) -> dict[str, Any]:
    """pv_helpers_test.go's ``makeTestVolume``: RWO+ROX, Filesystem, a local volume."""
    raw = make_pv(
        name,
        capacity=capacity,
        access_modes=["ReadWriteOnce", "ReadOnlyMany"],
        volume_mode="Filesystem",
        phase="Available" if available else None,
        source={"local": {"path": "/x"}},
        **kw,
    )
    raw["metadata"]["uid"] = uid
    return raw


VOLUMES = [
    volume("local-small", "local001", "5G", True),
    volume("local-pd-very-large", "local002", "200E", True, storage_class="large"),
    volume("affinity-pv", "affinity001", "100G", True, storage_class="wait", affinity={"key1": ["value1"]}),
    volume("affinity-pv2", "affinity002", "150G", True, storage_class="wait", affinity={"key1": ["value1"]}),
    volume(
        "affinity-prebound",
        "affinity003",
        "100G",
        True,
        storage_class="wait",
        claim=("myns", "claim02", ""),
        affinity={"key1": ["value1"]},
    ),
    volume("affinity-pv3", "affinity003", "200G", True, storage_class="wait", affinity={"key1": ["value3"]}),
    volume("affinity-pv4", "affinity004", "200G", False, storage_class="wait", affinity={"key1": ["value4"]}),
]


def with_vac(vac: str, vols: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for v in vols:
        c = {**v, "spec": {**v["spec"], "volumeAttributesClassName": vac}}
        out.append(c)
    return out


def claim(name: str, size: str, modes: list[str], vac: str | None = None) -> dict[str, Any]:
    """``makeTestPersistentVolumeClaim``: namespace myns, class wait, Filesystem."""
    return make_pvc(
        name,
        namespace="myns",
        storage_class="wait",
        request=size,
        access_modes=modes,
        volume_mode="Filesystem",
        vac=vac,
        uid="",
    )


RWO, RWX = ["ReadWriteOnce"], ["ReadWriteMany"]


@pytest.mark.parametrize(
    ("want", "vols", "pvc", "labels", "excluded"),
    [
        pytest.param(
            "affinity-pv", VOLUMES, claim("claim01", "100G", RWO), {"key1": "value1"}, {}, id="success-match"
        ),
        pytest.param(
            "affinity-prebound",
            VOLUMES,
            claim("claim02", "100G", RWO),
            {"key1": "value1"},
            {},
            id="success-prebound",
        ),
        pytest.param(
            "affinity-pv2",
            VOLUMES,
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            {"affinity001": None},
            id="success-exclusion",
        ),
        pytest.param(
            "",
            VOLUMES,
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            {"affinity001": None, "affinity002": None, "affinity002-vac": None},
            id="fail-exclusion",
        ),
        pytest.param(
            "", VOLUMES, claim("claim01", "100G", RWX), {"key1": "value1"}, {}, id="fail-accessmode"
        ),
        pytest.param(
            "", VOLUMES, claim("claim01", "100G", RWO), {"key1": "value2"}, {}, id="fail-nodeaffinity"
        ),
        pytest.param(
            "",
            VOLUMES,
            claim("claim02", "100G", RWO),
            {"key1": "value3"},
            {},
            id="fail-prebound-node-affinity",
        ),
        pytest.param(
            "", VOLUMES, claim("claim04", "100G", RWO), {"key1": "value4"}, {}, id="fail-nonavaliable"
        ),
        pytest.param(
            "affinity-pv3",
            VOLUMES,
            claim("claim03", "100G", RWO),
            {"key1": "value3"},
            {},
            id="success-bad-and-good-node-affinity",
        ),
        pytest.param(
            "affinity-pv",
            with_vac("gold", VOLUMES),
            claim("claim01", "100G", RWO, vac="gold"),
            {"key1": "value1"},
            {},
            id="success-match-with-vac",
        ),
        pytest.param(
            "", VOLUMES, claim("claim01", "100G", RWO, vac="silver"), {"key1": "value1"}, {}, id="fail-vac"
        ),
        pytest.param(
            "",
            with_vac("gold", VOLUMES),
            claim("claim02", "100G", RWO, vac="silver"),
            {"key1": "value1"},
            {},
            id="fail-prebound-vac",
        ),
    ],
)
def test_find_matching_volume_with_node(
    want: str,
    vols: list[dict[str, Any]],
    pvc: dict[str, Any],
    labels: Mapping[str, str],
    excluded: dict[str, Any],
) -> None:
    """TestFindMatchVolumeWithNode with the VolumeAttributesClass gate on (v1.35: GA)."""
    pvs = [pv_from_dict(v) for v in vols]
    got = find_matching_volume(
        pvc_from_dict(pvc), pvs, lambda v: node_affinity_matches(v.node_affinity, labels), excluded
    )
    assert (got.uid if got is not None else "") == want


@pytest.mark.parametrize(
    ("cls", "delay", "fail"),
    [
        pytest.param(None, False, False, id="nil-class"),
        pytest.param("not-here", False, False, id="class-not-found"),
        pytest.param("no-mode", False, True, id="no-mode-class"),
        pytest.param("immediate-mode", False, False, id="immediate-mode-class"),
        pytest.param("wait-mode", True, False, id="wait-mode-class"),
    ],
)
def test_delay_binding_mode(cls: str | None, delay: bool, fail: bool) -> None:
    store = VolumeStore()
    for name, mode in (
        ("no-mode", None),
        ("immediate-mode", "Immediate"),
        ("wait-mode", "WaitForFirstConsumer"),
    ):
        store.upsert("storageclasses", storage_class_from_dict(make_storage_class(name, binding_mode=mode)))
    pvc = pvc_from_dict(make_pvc("c", storage_class=cls))
    if fail:
        with pytest.raises(BinderError):
            _is_delay_binding(pvc, store)
    else:
        assert _is_delay_binding(pvc, store) is delay


def test_bind_volume_to_claim_sets_the_claim_ref_and_the_annotation_once() -> None:
    pvc = pvc_from_dict(make_pvc("c", namespace="ns", uid="u1", resource_version="7"))
    pv = pv_from_dict(make_pv("v"))
    bound, dirty = bind_volume_to_claim(pv, pvc)
    assert (
        dirty and bound.claim_ref is not None and (bound.claim_ref.name, bound.claim_ref.uid) == ("c", "u1")
    )
    assert bound.raw["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "c",
        "uid": "u1",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert bound.raw["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert pv.raw["spec"].get("claimRef") is None  # the original is untouched
    again, dirty = bind_volume_to_claim(bound, pvc)
    assert not dirty and again is bound
    # Pre-bound by the user (claimRef without uid): the uid is filled in, no bound-by-controller.
    user = pv_from_dict(make_pv("v", claim=("ns", "c", "")))
    filled, dirty = bind_volume_to_claim(user, pvc)
    assert dirty and "pv.kubernetes.io/bound-by-controller" not in filled.annotations


def test_with_selected_node_rewrites_the_raw_claim() -> None:
    pvc = pvc_from_dict(make_pvc("c", annotations={"a": "b"}))
    clone = with_selected_node(pvc, "n1")
    assert clone.selected_node == "n1" and pvc.selected_node is None
    assert clone.raw["metadata"]["annotations"] == {"a": "b", "volume.kubernetes.io/selected-node": "n1"}


@pytest.mark.parametrize(
    ("field", "labels", "matches"),
    [
        pytest.param(("In", "n1"), {}, False, id="metadata.name In never matches the nameless node"),
        pytest.param(("In", ""), {}, True, id="metadata.name In empty matches it"),
        pytest.param(("NotIn", "n1"), {}, True, id="metadata.name NotIn matches it"),
    ],
)
def test_check_node_affinity_sees_labels_only(
    field: tuple[str, str], labels: dict[str, str], matches: bool
) -> None:
    term = NodeSelectorTerm((), (Requirement("metadata.name", field[0], (field[1],)),))
    assert node_affinity_matches((term,), labels) is matches


def test_check_node_affinity_term_that_fails_to_parse_never_matches() -> None:
    bad = NodeSelectorTerm((Requirement("k", "In", ()),), ())
    good = NodeSelectorTerm((Requirement("k", "Exists", ()),), ())
    assert node_affinity_matches((bad,), {"k": "v"}) is False
    assert node_affinity_matches((bad, good), {"k": "v"}) is True
    assert node_affinity_matches((), {"k": "v"}) is False  # a required selector without terms
    assert node_affinity_matches(None, {}) is True


# --------------------------------------------------------------------------- CSI translation
GCE = {"gcePersistentDisk": {"pdName": "d"}}
BETA_ZONE, GA_ZONE = "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"
BETA_REGION, GA_REGION = "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"
GKE = "topology.gke.io/zone"


def reqs(terms: Any) -> list[list[tuple[str, str, tuple[str, ...]]]]:
    return [[(r.key, r.operator, r.values) for r in t.match_expressions] for t in terms]


@pytest.mark.parametrize(
    ("labels", "terms", "source", "want"),
    [
        pytest.param(
            {BETA_ZONE: "us-east-1"},
            None,
            GCE,
            [[(GKE, "In", ("us-east-1",))]],
            id="zone label becomes a term",
        ),
        pytest.param(
            {GA_ZONE: "z1__z2"},
            None,
            {"awsElasticBlockStore": {"volumeID": "vol-1"}},
            [[("topology.ebs.csi.aws.com/zone", "In", ("z1", "z2"))]],
            id="multi-zone label, AWS key",
        ),
        pytest.param(
            {},
            affinity_terms({GA_ZONE: ["z1"], "other": ["x"]}),
            GCE,
            [[(GKE, "In", ("z1",)), ("other", "In", ("x",))]],
            id="zone expression renamed",
        ),
        pytest.param(
            {BETA_ZONE: "z1"},
            affinity_terms({"rack": ["r1"]}, {"rack": ["r2"]}),
            GCE,
            [
                [("rack", "In", ("r1",)), (GKE, "In", ("z1",))],
                [("rack", "In", ("r2",)), (GKE, "In", ("z1",))],
            ],
            id="zone label appended to every term",
        ),
        pytest.param(
            {},
            affinity_terms({BETA_ZONE: ["z1"], BETA_REGION: ["r"]}),
            GCE,
            [[(GKE, "In", ("z1",)), (GA_REGION, "In", ("r",))]],
            id="beta region renamed to GA",
        ),
        pytest.param(
            {BETA_ZONE: "z1"},
            None,
            {"portworxVolume": {"volumeID": "p"}},
            None,
            id="portworx has no topology",
        ),
    ],
)
def test_translated_affinity(labels: dict[str, str], terms: Any, source: dict[str, Any], want: Any) -> None:
    pv = pv_from_dict(make_pv("v", labels=labels, terms=terms, source=source))
    got = translated_affinity(pv)
    assert (None if got is None else reqs(got)) == want


def test_gce_regional_disk_with_zones_of_two_regions_fails_to_translate() -> None:
    pv = pv_from_dict(make_pv("v", labels={BETA_ZONE: "us-east1-a__us-west1-b"}, source=GCE))
    with pytest.raises(TranslationError, match=r"multiple or no regions gotten from zones, got: map\["):
        translated_affinity(pv)
    bad = pv_from_dict(make_pv("v", labels={BETA_ZONE: "a__b"}, source=GCE))
    with pytest.raises(TranslationError, match="zone in unexpected format"):
        translated_affinity(bad)


def test_translation_applies_only_on_nodes_that_migrated_the_plugin() -> None:
    pv = pv_from_dict(make_pv("v", labels={BETA_ZONE: "z1"}, source=GCE))
    migrated = csi_node_from_dict(make_csi_node("n", migrated="kubernetes.io/gce-pd"))
    other = csi_node_from_dict(make_csi_node("n", migrated="kubernetes.io/aws-ebs"))
    assert effective_affinity(pv, migrated) is not None
    assert effective_affinity(pv, other) is None
    assert effective_affinity(pv, None) is None
