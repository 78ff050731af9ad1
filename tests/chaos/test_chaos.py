"""Chaos: the scheduler under API faults, leader SIGKILLs and partitions still binds every pod once.

- ``test_chaos_short`` (CI, runs in every plain ``pytest``): 100 nodes, 500 pods, one SIGKILL, one
  partition.
- ``test_chaos_full`` (opt-in: ``pytest -m chaos tests/chaos -s``): 500 nodes, 5,000 pods, two SIGKILLs.
- ``test_chaos_partitions`` (opt-in, as above): 500 nodes, 5,000 pods, one SIGKILL and eight
  partitions of the leader (whole replica or its Lease client only; refused or black-holed): each
  deposed leader exits, none of its writes lands after its lease expired, a standby takes over
  within leaseDuration + retryPeriod.

Faults (``chaos_run.fault_config``): 5 % of requests answered 500/503, 2 % 429 with Retry-After, 2 %
of bindings refused with 409, watch streams dropped every 1,000 events, 100 ms latency spikes. Two
``ksched run`` replicas elect a leader over a Lease; each SIGKILLed leader is replaced by a new
process. The end state is checked against an oracle written in ``chaos_run`` (not ksched's code):
each pod that fits some node is bound exactly once (audit log) to a node where it fits; each other
pod has a FailedScheduling event and a ``PodScheduled=False`` condition; no node is over-committed
(cpu, memory, GPUs, pod count, host ports); the replicas that were not killed are still running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_run import ChaosParams, run_chaos

pytestmark = pytest.mark.chaos


TAKEOVER_SLACK_S = 1.0
"""On top of leaseDuration + retryPeriod: the takeover's own requests, retried through the faults."""


def test_chaos_short(tmp_path: Path) -> None:
    params = ChaosParams(nodes=100, pods=500, waves=4, kills=1, partitions=1, timeout_s=150)
    result = run_chaos(params, tmp_path)
    print(result.line())
    assert result.double_binds == 0
    assert result.kills == 1
    assert len(result.partitions) == 1 and result.late_writes == 0
    assert sum(result.faults.values()) > 0


@pytest.mark.slow
def test_chaos_full(tmp_path: Path) -> None:
    result = run_chaos(ChaosParams(nodes=500, pods=5000, waves=10, kills=2, timeout_s=900), tmp_path)
    print(result.line())
    assert result.double_binds == 0
    assert result.kills == 2


@pytest.mark.slow
def test_chaos_partitions(tmp_path: Path) -> None:
    params = ChaosParams(nodes=500, pods=5000, waves=12, kills=1, partitions=8, timeout_s=900)
    result = run_chaos(params, tmp_path)
    print(result.line())
    assert result.double_binds == 0
    assert len(result.partitions) == 8
    assert result.late_writes == 0
    assert max(result.takeovers_s) <= params.lease_s + params.retry_s + TAKEOVER_SLACK_S
