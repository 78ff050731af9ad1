"""What a client behind a :class:`~ksched.sim.faults.PartitionRule` gets instead of an answer.

- ``refuse``: the rule's status at once (503 by default), with no Retry-After, so a retrying
  client keeps knocking;
- ``reset``: the connection is dropped without a byte of answer;
- ``blackhole``: nothing, for as long as the rule is in force (checked every :data:`POLL_S`); then
  the connection is dropped. The request never reaches the store: a write held this way is never
  applied, not even after the partition heals (a real network could deliver it late; the fencing
  tests rely on this sim never doing so).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from ksched.sim import _status as st
from ksched.sim._web import error_response
from ksched.sim.faults import FaultInjector, PartitionRule

POLL_S = 0.05


async def hold(faults: FaultInjector, rule: PartitionRule) -> None:
    """Wait while ``rule`` is in force."""
    while faults.holds(rule):
        await asyncio.sleep(POLL_S)


def drop_connection(request: web.BaseRequest) -> None:
    if request.transport is not None:
        request.transport.abort()


async def cut_off(
    request: web.BaseRequest, rule: PartitionRule, faults: FaultInjector
) -> tuple[web.StreamResponse, int]:
    """The response for a partitioned request and the status the client saw (0: none)."""
    faults.count(f"partition-{rule.mode}")
    if rule.mode == "refuse":
        msg = "injected: this client is partitioned from the API server"
        return error_response(st.StatusError(rule.code, msg)), rule.code
    if rule.mode == "blackhole":
        await hold(faults, rule)
    drop_connection(request)
    return web.Response(status=503), 0
