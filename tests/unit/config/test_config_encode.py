"""``--write-config-to``'s encoding: Go durations, and a round trip back to the same configuration."""

from __future__ import annotations

import pytest
import yaml

from ksched.config import config_from_dict, default_config
from ksched.config.durations import format_go_duration, parse_go_duration
from ksched.config.encode import config_to_dict, config_to_yaml
from ksched.config.features import DEFAULT_GATES, GATES

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(15, "15s"), (90, "1m30s"), (0.1, "100ms"), (3600, "1h0m0s"), (0, "0s"), (1.5, "1.5s"), (300, "5m0s")],
)
def test_go_duration_string(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({}, id="defaults"),
        pytest.param(
            {
                "percentageOfNodesToScore": 40,
                "leaderElection": {"leaderElect": False, "leaseDuration": "1m"},
                "profiles": [
                    {"schedulerName": "a"},
                    {
                        "schedulerName": "b",
                        "plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 7}]}},
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "RequestedToCapacityRatio",
                                        "resources": [{"name": "cpu", "weight": 1}],
                                        "requestedToCapacityRatio": {
                                            "shape": [
                                                {"utilization": 0, "score": 0},
                                                {"utilization": 100, "score": 10},
                                            ]
                                        },
                                    }
                                },
                            },
                            {"name": "DynamicResources", "args": {"filterTimeout": "0s"}},
                        ],
                    },
                ],
            },
            id="two profiles, custom weights, RequestedToCapacityRatio, DynamicResources args",
        ),
    ],
)
def test_round_trip(doc: dict) -> None:
    cfg = config_from_dict({**HEADER, **doc})
    again = config_from_dict(yaml.safe_load(config_to_yaml(cfg)))
    assert again == cfg


def test_encoding_uses_upstreams_names() -> None:
    doc = config_to_dict(default_config())
    assert doc["leaderElection"]["leaseDuration"] == "15s"
    assert doc["clientConnection"]["contentType"] == "application/vnd.kubernetes.protobuf"
    assert doc["profiles"][0]["schedulerName"] == "default-scheduler"


def test_default_gates_are_what_ksched_implements() -> None:
    assert all(DEFAULT_GATES.enabled(g.name) == g.default == g.implemented for g in GATES)
