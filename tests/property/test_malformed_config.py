"""Malformed KubeSchedulerConfiguration documents: a ConfigError naming the field, never a crash.

A feature-rich valid configuration (two profiles, plugin sets, weights, args for NodeResourcesFit,
PodTopologySpread, InterPodAffinity, DefaultPreemption, leader election, client connection) gets one
to three random mutations (deleted keys, values of the wrong type, 2^63 integers, unicode strings,
invalid quantities). ``config_from_dict`` must return a configuration or raise
:class:`~ksched.errors.ConfigError` whose message starts with the source and names a field path;
``load_config`` on the same document written as a file must behave the same.

Examples: a few hundred (CI); 1,000 with ``HYPOTHESIS_PROFILE=full``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from test_malformed_objects import PROFILE, mutated

from ksched.config import load_config
from ksched.config.load import config_from_dict
from ksched.errors import ConfigError


def base_config() -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 16,
        "percentageOfNodesToScore": 0,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "enableProfiling": False,
        "clientConnection": {"qps": 50, "burst": 100, "kubeconfig": ""},
        "leaderElection": {"leaderElect": True, "leaseDuration": "15s", "renewDeadline": "10s",
                           "retryPeriod": "2s", "resourceNamespace": "kube-system",
                           "resourceName": "kube-scheduler"},
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "score": {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 2}],
                              "disabled": [{"name": "ImageLocality"}]},
                    "multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 3}]},
                },
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}},
                    {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": [
                        {"maxSkew": 3, "topologyKey": "topology.kubernetes.io/zone",
                         "whenUnsatisfiable": "ScheduleAnyway"}]}},
                    {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 1}},
                    {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10,
                                                           "minCandidateNodesAbsolute": 100}},
                ],
            },
            {"schedulerName": "second", "percentageOfNodesToScore": 50},
        ],
    }


def test_malformed_config_base_is_valid() -> None:
    assert config_from_dict(base_config()) is not None


@PROFILE
@given(mutated(base_config(), None, protect_name=False))
def test_malformed_config_loads_or_names_the_field(doc: dict[str, Any]) -> None:
    try:
        config_from_dict(doc, source="cfg.yaml")
        in_memory = ""
    except ConfigError as exc:
        in_memory = str(exc)
        assert in_memory.startswith("cfg.yaml: "), in_memory
        assert exc.problem, in_memory
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cfg.yaml"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        try:
            load_config(path)
            from_file = ""
        except ConfigError as exc:
            from_file = str(exc)
            assert from_file.startswith(str(path)), from_file
    if in_memory or not from_file:
        assert bool(in_memory) == bool(from_file), (in_memory, from_file)
    else:  # YAML itself refuses some characters JSON allows (control characters, for one)
        assert "not valid YAML or JSON" in from_file, from_file
