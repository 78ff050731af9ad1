"""Fault rules: which requests they match (verb, resource, and the client's User-Agent)."""

from __future__ import annotations

import pytest

from ksched.sim.faults import FaultConfig, FaultInjector

SCHEDULER = "ksched/0.1.0"
CONTROLLERS = "ksched-sim-storage-controllers/0.1.0"


@pytest.mark.parametrize(
    ("user_agent", "scheduler_hit", "controllers_hit"),
    [
        pytest.param("", True, True, id="no user_agent matches every client"),
        pytest.param("ksched/", True, False, id="the scheduler only"),
        pytest.param("ksched-sim-storage-controllers/", False, True, id="the storage controllers only"),
    ],
)
def test_error_rule_matches_user_agent_substring(
    user_agent: str, scheduler_hit: bool, controllers_hit: bool
) -> None:
    rule = {"verb": "create", "resource": "persistentvolumes", "code": 500, "rate": 1.0}
    faults = FaultInjector(FaultConfig.from_dict({"errors": [{**rule, "user_agent": user_agent}]}))
    assert (faults.error("create", "persistentvolumes", SCHEDULER) is not None) is scheduler_hit
    assert (faults.error("create", "persistentvolumes", CONTROLLERS) is not None) is controllers_hit
    assert faults.error("update", "persistentvolumes", CONTROLLERS) is None


def test_latency_rule_matches_user_agent_substring() -> None:
    cfg = FaultConfig.from_dict({"latency": [{"ms": 7, "user_agent": "ksched-sim-storage-controllers/"}]})
    faults = FaultInjector(cfg)
    assert faults.delay_s("get", "pods", CONTROLLERS) == pytest.approx(0.007)
    assert faults.delay_s("get", "pods", SCHEDULER) == 0.0
    assert faults.delay_s("get", "pods") == 0.0


def test_user_agent_round_trips_through_json() -> None:
    cfg = FaultConfig.from_dict({"errors": [{"code": 503, "rate": 0.5, "user_agent": "ksched/"}]})
    assert FaultConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.to_dict()["errors"][0]["user_agent"] == "ksched/"
