"""The runtime's shortcuts decide exactly as the long way round.

- ``skips_pods_without`` declarations (``PodGatedPlugin``) match what the plugins' PreFilter and
  PreScore really return, so not calling them changes nothing.
- A cycle that picks its node from the fused sweep's ``BestRows`` picks the same node, and reports
  the same total, as one that sums and scans (explain mode never uses the shortcut).
"""

from __future__ import annotations

import numpy as np
import pytest

from ksched.config.load import default_config
from ksched.framework.interface import Code, CycleState
from ksched.framework.profile import build_profiles
from ksched.model.pod import pod_from_dict
from tests.builders import cluster_of, make_node, make_pod, pod


def _gated_default_plugins() -> list[object]:
    plugins = build_profiles(default_config(), seed=1)["default-scheduler"].plugins.values()
    return [p for p in plugins if getattr(p, "skips_pods_without", None) is not None]


def test_some_default_plugins_are_gated() -> None:
    assert len(_gated_default_plugins()) >= 5


@pytest.mark.parametrize("plugin", _gated_default_plugins(), ids=lambda p: getattr(p, "name", repr(p)))
def test_gate_declarations_match_the_methods(plugin: object) -> None:
    attr = plugin.skips_pods_without  # type: ignore[attr-defined]
    cluster = cluster_of([make_node("n0", cpu=4, memory="8Gi", pods=10)])
    plain = pod(requests={"cpu": "1"})
    assert not getattr(plain, attr)
    if hasattr(plugin, "pre_filter"):
        pfr, status = plugin.pre_filter(CycleState(), plain, cluster)
        assert pfr is None and status.code == Code.SKIP
    if hasattr(plugin, "pre_score"):
        assert plugin.pre_score(CycleState(), plain, cluster, np.ones(1, dtype=np.bool_)).code == Code.SKIP
    # Binding-cycle points do nothing for such pods either (the loop then skips the binding cycle).
    state = CycleState()
    if hasattr(plugin, "reserve"):
        assert plugin.reserve(state, plain, "n0").ok
    if hasattr(plugin, "pre_bind_pre_flight"):
        assert plugin.pre_bind_pre_flight(state, plain, "n0").code == Code.SKIP
    if hasattr(plugin, "pre_bind"):
        assert plugin.pre_bind(state, plain, "n0").ok
    if hasattr(plugin, "unreserve"):
        plugin.unreserve(state, plain, "n0")


def test_default_profile_binds_plain_pods_without_a_binding_cycle() -> None:
    fw = build_profiles(default_config(), seed=1)["default-scheduler"]
    assert fw.has_binding_plugins  # VolumeBinding reserves and pre-binds, for pods with claims
    assert not fw.needs_binding_cycle(pod(requests={"cpu": "1"}))
    assert fw.needs_binding_cycle(pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]))


@pytest.mark.parametrize("seed", range(8))
def test_best_rows_shortcut_picks_what_the_sum_picks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = [("4", "8Gi"), ("8", "16Gi")]
    nodes = []
    for i in range(40):
        cpu, mem = sizes[int(rng.integers(2))]
        nodes.append(make_node(f"n{i:02d}", cpu=cpu, memory=mem, pods=int(rng.integers(0, 4))))
    cluster = cluster_of(nodes)
    incoming = pod(requests={"cpu": "500m", "memory": "1Gi"})
    fast = build_profiles(default_config(), seed=seed)["default-scheduler"]
    slow = build_profiles(default_config(), seed=seed)["default-scheduler"]
    for _ in range(5):
        a = fast.schedule_pod(incoming, cluster)
        b = slow.schedule_pod(incoming, cluster, explain=True)  # explain: always sums and scans
        assert a.selected_row == b.selected_row
        np.testing.assert_array_equal(np.asarray(a.total), np.asarray(b.total))


def test_a_pod_whose_claim_is_missing_is_unresolvable_with_upstreams_message() -> None:
    cluster = cluster_of([make_node("n0", cpu=4, memory="8Gi", pods=10)])
    claimed = make_pod("p", cpu="1")
    claimed["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    result = build_profiles(default_config(), seed=1)["default-scheduler"].schedule_pod(
        pod_from_dict(claimed), cluster
    )
    assert result.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert 'persistentvolumeclaim "data" not found' in result.status.message


def test_a_pod_whose_claims_are_all_bound_skips_the_binding_cycle() -> None:
    """VolumeBinding's binding_work says no when PreFilter found every claim bound: Reserve and
    PreBind would do nothing, so the pod goes straight to the binder."""
    from ksched.cache.volumes import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
    from ksched.model.storage import pv_from_dict, pvc_from_dict

    cluster = cluster_of([make_node("n0", cpu=4, memory="8Gi", pods=10)])
    cluster.volumes.upsert(
        PERSISTENT_VOLUMES,
        pv_from_dict({"metadata": {"name": "pv"}, "spec": {"csi": {"driver": "d", "volumeHandle": "h"}}}),
    )
    cluster.volumes.upsert(
        PERSISTENT_VOLUME_CLAIMS,
        pvc_from_dict(
            {
                "metadata": {
                    "name": "data",
                    "namespace": "default",
                    "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
                },
                "spec": {"volumeName": "pv"},
            }
        ),
    )
    claimed = make_pod("p", cpu="1")
    claimed["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    fw = build_profiles(default_config(), seed=1)["default-scheduler"]
    record = pod_from_dict(claimed)
    result = fw.schedule_pod(record, cluster)
    assert result.selected_node == "n0"
    assert fw.needs_binding_cycle(record)  # by its attributes it might have work
    assert not fw.needs_binding_cycle(record, result.state)  # its cycle says it has none
