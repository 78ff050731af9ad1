"""Validation of in-tree plugin args, with field paths.

Ported from upstream ``pkg/scheduler/apis/config/validation/validation_pluginargs_test.go``:
``TestValidateDefaultPreemptionArgs`` (6), ``TestValidateInterPodAffinityArgs`` (3),
``TestValidatePodTopologySpreadArgs`` (10), ``TestValidateNodeResourcesBalancedAllocationArgs`` (3),
``TestValidateNodeAffinityArgs`` (3 + Gt/Lt/operator cases), ``TestValidateVolumeBindingArgs``
(gate-off cases), ``TestValidateFitArgs`` (10) and the three ``*ScoringStrategy`` tables.
Each case lists the field paths of the expected errors, in order (upstream compares type+field).
"""

from __future__ import annotations

import pytest

from ksched.config.pluginargs import decode_plugin_args
from ksched.errors import ConfigError

CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def paths(name, args):
    errs: list[ConfigError] = []
    decode_plugin_args(name, args, "", errs)
    return [e.path for e in errs]


def tsc(skew=1, key="node", action="DoNotSchedule", **extra):
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action, **extra}


def fit(**strategy):
    return {"scoringStrategy": strategy}


def req(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


def added(required=None, preferred=None):
    aff = {}
    if required is not None:
        aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"addedAffinity": aff}


RTCR = "RequestedToCapacityRatio"
SHAPE = "scoringStrategy.requestedToCapacityRatio.shape"
REQ0 = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"

CASES = [
    # DefaultPreemption
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
        [],
        id="preemption: valid args",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": -1},
        ["minCandidateNodesPercentage"],
        id="preemption: negative percentage",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 900},
        ["minCandidateNodesPercentage"],
        id="preemption: percentage over 100",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
        ["minCandidateNodesAbsolute"],
        id="preemption: negative absolute",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
        id="preemption: all zero",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
        ["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
        id="preemption: both negative",
    ),
    # InterPodAffinity
    pytest.param("InterPodAffinity", {"hardPodAffinityWeight": 10}, [], id="interpod: valid"),
    pytest.param(
        "InterPodAffinity",
        {"hardPodAffinityWeight": -1},
        ["hardPodAffinityWeight"],
        id="interpod: weight below 0",
    ),
    pytest.param(
        "InterPodAffinity",
        {"hardPodAffinityWeight": 101},
        ["hardPodAffinityWeight"],
        id="interpod: weight above 100",
    ),
    # PodTopologySpread
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(), tsc(2, "zone", "ScheduleAnyway")], "defaultingType": "List"},
        [],
        id="spread: valid config",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(-1)], "defaultingType": "List"},
        ["defaultConstraints[0].maxSkew"],
        id="spread: maxSkew less than zero",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(key="")], "defaultingType": "List"},
        ["defaultConstraints[0].topologyKey"],
        id="spread: empty topology key",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(action="")], "defaultingType": "List"},
        ["defaultConstraints[0].whenUnsatisfiable"],
        id="spread: whenUnsatisfiable is empty",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(action="unknown action")], "defaultingType": "List"},
        ["defaultConstraints[0].whenUnsatisfiable"],
        id="spread: unsupported action",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(), tsc(2)], "defaultingType": "List"},
        ["defaultConstraints[1]"],
        id="spread: duplicated constraints",
    ),
    pytest.param(
        "PodTopologySpread",
        {
            "defaultConstraints": [tsc(key="key", labelSelector={"matchLabels": {"a": "b"}})],
            "defaultingType": "List",
        },
        ["defaultConstraints[0].labelSelector"],
        id="spread: label selector present",
    ),
    pytest.param(
        "PodTopologySpread", {"defaultingType": "List"}, [], id="spread: list defaulting, no constraints"
    ),
    pytest.param("PodTopologySpread", {"defaultingType": "System"}, [], id="spread: system defaulting"),
    pytest.param(
        "PodTopologySpread",
        {"defaultingType": "unknown"},
        ["defaultingType"],
        id="spread: wrong defaulting type",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultConstraints": [tsc(key="key")], "defaultingType": "System"},
        ["defaultingType"],
        id="spread: system defaulting but has constraints",
    ),
    # NodeResourcesBalancedAllocation
    pytest.param("NodeResourcesBalancedAllocation", {"resources": CPU_MEM}, [], id="balanced: valid"),
    pytest.param(
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]},
        ["resources[0].weight"],
        id="balanced: weight other than 1",
    ),
    pytest.param(
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
        ["resources[1].name"],
        id="balanced: repeated resources",
    ),
    # NodeAffinity
    pytest.param("NodeAffinity", {}, [], id="affinity: empty"),
    pytest.param(
        "NodeAffinity",
        added(
            [{"matchExpressions": [req("label-1", "In", "label-1-val")]}],
            [{"weight": 1, "preference": {"matchFields": [req("metadata.name", "In", "node-1")]}}],
        ),
        [],
        id="affinity: valid added affinity",
    ),
    pytest.param(
        "NodeAffinity",
        added(
            [{"matchExpressions": [req("invalid/label/key", "In", "label-1-val")]}],
            [{"weight": 1, "preference": {"matchFields": [req("metadata.name", "In", "node-1", "node-2")]}}],
        ),
        [
            f"{REQ0}.matchExpressions[0].key",
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values",
        ],
        id="affinity: invalid added affinity",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchExpressions": [req("k", "Gt", "1", "2")]}]),
        [f"{REQ0}.matchExpressions[0].values"],
        id="affinity: Gt with two values",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchExpressions": [req("k", "Lt", "abc")]}]),
        [f"{REQ0}.matchExpressions[0].values[0]"],
        id="affinity: Lt with a non-integer",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchExpressions": [req("k", "Near", "x")]}]),
        [f"{REQ0}.matchExpressions[0].operator"],
        id="affinity: unknown operator",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchExpressions": [req("k", "In")]}]),
        [f"{REQ0}.matchExpressions[0].values"],
        id="affinity: In without values",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchExpressions": [req("k", "Exists", "x")]}]),
        [f"{REQ0}.matchExpressions[0].values"],
        id="affinity: Exists with values",
    ),
    pytest.param(
        "NodeAffinity",
        added([{"matchFields": [req("metadata.labels", "In", "x")]}]),
        [f"{REQ0}.matchFields[0].key"],
        id="affinity: field selector on a key other than metadata.name",
    ),
    pytest.param(
        "NodeAffinity",
        added(preferred=[{"weight": 0, "preference": {"matchExpressions": [req("k", "Near", "x")]}}]),
        [],
        id="affinity: zero-weight preferred term is skipped as upstream",
    ),
    # VolumeBinding (StorageCapacityScoring off in v1.35)
    pytest.param("VolumeBinding", {"bindTimeoutSeconds": 0}, [], id="volume: zero is valid"),
    pytest.param("VolumeBinding", {"bindTimeoutSeconds": 10}, [], id="volume: positive is valid"),
    pytest.param("VolumeBinding", {"bindTimeoutSeconds": -10}, ["bindTimeoutSeconds"], id="volume: negative"),
    pytest.param(
        "VolumeBinding",
        {"bindTimeoutSeconds": 10, "shape": [{"utilization": 1, "score": 1}]},
        ["shape"],
        id="volume: shape with the gate off",
    ),
    # NodeResourcesFit (TestValidateFitArgs)
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResources": ["longvalue" + "a" * 64]},
        ["ignoredResources[0]"],
        id="fit: ignored resource too long",
    ),
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResources": ["example.com/"]},
        ["ignoredResources[0]"],
        id="fit: ignored resource name is empty",
    ),
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResources": ["example.com/aaa/bbb"]},
        ["ignoredResources[0]"],
        id="fit: ignored resource has too many slashes",
    ),
    pytest.param(
        "NodeResourcesFit", {"ignoredResources": ["example.com"]}, [], id="fit: valid ignored resources"
    ),
    pytest.param("NodeResourcesFit", {"ignoredResourceGroups": ["example.com"]}, [], id="fit: valid groups"),
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["example.com/"]},
        ["ignoredResourceGroups[0]", "ignoredResourceGroups[0]"],
        id="fit: group with trailing slash",
    ),
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["a" * 64]},
        ["ignoredResourceGroups[0]"],
        id="fit: group name too long",
    ),
    pytest.param(
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["example.com/aa"]},
        ["ignoredResourceGroups[0]"],
        id="fit: group name contains a slash",
    ),
    pytest.param(
        "NodeResourcesFit", fit(type="Invalid"), ["scoringStrategy.type"], id="fit: unsupported type"
    ),
    pytest.param(
        "NodeResourcesFit",
        fit(type="LeastAllocated", requestedToCapacityRatio={"shape": []}),
        ["scoringStrategy.requestedToCapacityRatio"],
        id="fit: shape with a non-RTCR type",
    ),
    # Least/MostAllocated scoring strategies
    *[
        pytest.param("NodeResourcesFit", fit(type=t, resources=res), want, id=f"{t}: {label}")
        for t in ("LeastAllocated", "MostAllocated")
        for label, res, want in (
            ("default config", None, []),
            ("multi valid resources", [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 10}], []),
            (
                "weight less than min",
                [{"name": "cpu", "weight": -1}],
                ["scoringStrategy.resources[0].weight"],
            ),
            (
                "weight greater than max",
                [{"name": "cpu", "weight": 101}],
                ["scoringStrategy.resources[0].weight"],
            ),
            (
                "multi invalid resources",
                [{"name": "cpu", "weight": -1}, {"name": "memory", "weight": 101}],
                ["scoringStrategy.resources[0].weight", "scoringStrategy.resources[1].weight"],
            ),
        )
    ],
    # RequestedToCapacityRatio
    pytest.param(
        "NodeResourcesFit",
        fit(type=RTCR),
        ["scoringStrategy.requestedToCapacityRatio"],
        id="rtcr: no shape section",
    ),
    pytest.param(
        "NodeResourcesFit",
        fit(type=RTCR, requestedToCapacityRatio={"shape": []}),
        [SHAPE],
        id="rtcr: no shapes",
    ),
    pytest.param(
        "NodeResourcesFit",
        fit(
            type=RTCR,
            resources=[{"name": "cpu", "weight": 101}],
            requestedToCapacityRatio={"shape": [{"utilization": 30, "score": 3}]},
        ),
        ["scoringStrategy.resources[0].weight"],
        id="rtcr: weight greater than max",
    ),
    pytest.param(
        "NodeResourcesFit",
        fit(type=RTCR, requestedToCapacityRatio={"shape": [{"utilization": 30, "score": 3}]}),
        [],
        id="rtcr: valid shapes",
    ),
    *[
        pytest.param(
            "NodeResourcesFit",
            fit(type=RTCR, requestedToCapacityRatio={"shape": shape}),
            want,
            id=f"rtcr: {label}",
        )
        for label, shape, want in (
            ("utilization less than min", [{"utilization": -1, "score": 3}], [f"{SHAPE}[0].utilization"]),
            ("utilization greater than max", [{"utilization": 101, "score": 3}], [f"{SHAPE}[0].utilization"]),
            (
                "duplicated utilization values",
                [{"utilization": 10, "score": 3}, {"utilization": 10, "score": 3}],
                [f"{SHAPE}[1].utilization"],
            ),
            ("increasing utilization values", [{"utilization": u, "score": 3} for u in (10, 20, 30)], []),
            (
                "non-increasing utilization values",
                [{"utilization": u, "score": 3} for u in (10, 20, 15)],
                [f"{SHAPE}[2].utilization"],
            ),
            ("score less than min", [{"utilization": 10, "score": -1}], [f"{SHAPE}[0].score"]),
            ("score greater than max", [{"utilization": 10, "score": 11}], [f"{SHAPE}[0].score"]),
        )
    ],
]


@pytest.mark.parametrize(("name", "args", "want"), CASES)
def test_validate_plugin_args(name, args, want):
    assert paths(name, args) == want


def test_messages_quote_values():
    errs: list[ConfigError] = []
    decode_plugin_args("InterPodAffinity", {"hardPodAffinityWeight": 101}, "args", errs)
    assert str(errs[0]) == "args.hardPodAffinityWeight: invalid value 101: not in valid range [0, 100]"
    errs.clear()
    decode_plugin_args("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/aa"]}, "args", errs)
    want = 'args.ignoredResourceGroups[0]: invalid value "example.com/aa": '
    assert str(errs[0]) == want + "resource group name can't contain '/'"
