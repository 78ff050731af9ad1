"""Shared pieces of the queueing-hint tests: upstream's wrappers.go shapes over ``tests/builders.py``.

Upstream's hint tables build pods and nodes with ``st.MakePod()`` / ``st.MakeNode()``; these give
the same objects as ksched records (parsed from API dicts, so the model's parsing runs too).
``wrong type`` cases pass a string where a record belongs, as upstream's do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ksched.framework.api import ClusterEventSpec, QueueingHint
from ksched.model.node import Node
from ksched.model.pod import Pod
from tests.builders import node, pod

Q = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP
NOT_A_POD = "not-a-pod"
NOT_A_NODE = "not-a-node"
EXTENDED_A = "example.com/aaa"
"""Upstream fit_test.go ``extendedResourceA``."""
EXTENDED_B = "example.com/bbb"
HUGE_PAGES_A = "hugepages-2Mi"
"""Upstream fit_test.go ``hugePageResourceA``."""


def capacity_node(resources: Mapping[str, str | int] | None = None, name: str = "node", **kw: Any) -> Node:
    """``st.MakeNode().Capacity(resources)``: allocatable as given, 32 pods unless ``pods`` is named."""
    alloc = {"pods": "32", **{k: str(v) for k, v in (resources or {}).items()}}
    return node(name, allocatable=alloc, **kw)


def labelled_node(name: str = "node", **labels: str) -> Node:
    """``st.MakeNode().Name(name).Label(k, v)...`` (keyword names stand for label keys)."""
    return node(name, labels=labels)


def resource_pod(
    name: str = "pod",
    *,
    milli_cpu: int = 0,
    memory: int = 0,
    ephemeral: int = 0,
    scalar: Mapping[str, int] | None = None,
    **kw: Any,
) -> Pod:
    """Upstream fit_test.go ``newResourcePod(framework.Resource{...})``: one container requesting
    exactly these (zeros left out, as the scheduler ignores them)."""
    requests: dict[str, str] = {}
    if milli_cpu:
        requests["cpu"] = f"{milli_cpu}m"
    if memory:
        requests["memory"] = str(memory)
    if ephemeral:
        requests["ephemeral-storage"] = str(ephemeral)
    requests.update({k: str(v) for k, v in (scalar or {}).items()})
    return pod(name, requests=requests, **kw)


def spec_keys(specs: list[ClusterEventSpec]) -> list[tuple[str, frozenset[str]]]:
    """Registrations as (resource, set of actions): upstream compares action bits, not their order."""
    return [(s.resource, frozenset(s.actions)) for s in specs]


__all__ = [
    "EXTENDED_A",
    "EXTENDED_B",
    "HUGE_PAGES_A",
    "NOT_A_NODE",
    "NOT_A_POD",
    "SKIP",
    "Q",
    "capacity_node",
    "labelled_node",
    "resource_pod",
    "spec_keys",
]
