"""In-tree volume sources as csi-translation-lib translates them (``plugins/aws_ebs.go``,
``gce_pd.go``, ``azure_disk.go``, ``openstack_cinder.go``, ``portworx.go``): the CSI handle that
NodeVolumeLimits counts, or the translator's refusal."""

from __future__ import annotations

import pytest

from ksched.model.storage import pv_from_dict
from ksched.model.volumes import MIGRATION_ON, ebs_volume_id, gce_zone, parse_in_tree

BETA = "failure-domain.beta.kubernetes.io/zone"
GA = "topology.kubernetes.io/zone"


@pytest.mark.parametrize(
    ("kubernetes_id", "want"),
    [
        pytest.param("vol-123", "vol-123", id="bare id"),
        pytest.param("aws://us-east-1a/vol-123", "vol-123", id="zone url"),
        pytest.param("aws:///vol-123", "vol-123", id="url without zone"),
        pytest.param("anything", "anything", id="not a url: taken as it is"),
    ],
)
def test_ebs_volume_id(kubernetes_id: str, want: str) -> None:
    assert ebs_volume_id(kubernetes_id) == want


@pytest.mark.parametrize("kubernetes_id", ["aws://vol-123", "aws://zone/a/vol-1", "aws://zone/disk-1"])
def test_ebs_url_that_is_not_a_volume_is_refused(kubernetes_id: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid format for AWS volume"):
        ebs_volume_id(kubernetes_id)
    src = parse_in_tree({"awsElasticBlockStore": {"volumeID": kubernetes_id}}, "o", "spec")
    assert src is not None and src.csi_handle == ""
    assert src.translation_error.startswith(
        "failed to translate Kubernetes ID to EBS Volume ID Invalid format"
    )


@pytest.mark.parametrize(
    ("labels", "handle"),
    [
        pytest.param({}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d", id="no zone label"),
        pytest.param({GA: "us-central1-a"}, "projects/UNSPECIFIED/zones/us-central1-a/disks/d", id="GA zone"),
        pytest.param(
            {BETA: "us-central1-b", GA: "us-central1-a"},
            "projects/UNSPECIFIED/zones/us-central1-b/disks/d",
            id="the beta label is read first",
        ),
        pytest.param(
            {GA: "us-central1-a__us-central1-b"},
            "projects/UNSPECIFIED/regions/us-central1/disks/d",
            id="regional: the region of its zones",
        ),
    ],
)
def test_gce_pv_handle(labels: dict[str, str], handle: str) -> None:
    pv = pv_from_dict(
        {"metadata": {"name": "p", "labels": labels}, "spec": {"gcePersistentDisk": {"pdName": "d"}}}
    )
    assert pv.in_tree is not None and pv.in_tree.csi_handle == handle


@pytest.mark.parametrize("zones", ["us-central1-a__us-east1-b", "a__b", "us-central1-a__"])
def test_gce_regional_pv_without_one_region_is_refused(zones: str) -> None:
    assert gce_zone({GA: zones})[1].startswith("failed to get region from zones")


def test_gce_inline_handle_has_no_zone() -> None:
    src = parse_in_tree({"gcePersistentDisk": {"pdName": "d"}}, "o", "spec")
    assert src is not None and src.csi_handle == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"


@pytest.mark.parametrize(
    ("kind", "refused"), [(None, False), ("Managed", False), ("managed", False), ("Shared", True)]
)
def test_azure_disk_kind(kind: str | None, refused: bool) -> None:
    source: dict[str, object] = {
        "diskURI": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"
    }
    if kind is not None:
        source["kind"] = kind
    src = parse_in_tree({"azureDisk": source}, "o", "spec")
    assert src is not None
    assert bool(src.translation_error) is refused
    assert src.csi_handle == ("" if refused else source["diskURI"])


@pytest.mark.parametrize(
    ("field", "source", "driver", "handle"),
    [
        ("cinder", {"volumeID": "c1"}, "cinder.csi.openstack.org", "c1"),
        ("portworxVolume", {"volumeID": "p1"}, "pxd.portworx.com", "p1"),
    ],
)
def test_other_migrating_sources(field: str, source: dict[str, str], driver: str, handle: str) -> None:
    src = parse_in_tree({field: source}, "o", "spec")
    assert src is not None and src.migrated_driver == driver and src.csi_handle == handle


@pytest.mark.parametrize("field", ["azureFile", "vsphereVolume"])
def test_translatable_sources_that_do_not_migrate(field: str) -> None:
    src = parse_in_tree({field: {}}, "o", "spec")
    assert src is not None and src.migratable and src.migrated_driver == "" and src.plugin not in MIGRATION_ON
