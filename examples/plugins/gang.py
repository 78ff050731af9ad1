"""Gang: bind the members of a gang together or not at all (the core of gang scheduling).

Pods say which gang they belong to and how big it is with two labels::

    example.com/gang: train-42
    example.com/gang-size: "4"

Each member goes through the normal cycle and gets a node; then Permit holds it (``Wait``) until
``gang-size`` members of its gang hold a node, and the last one to arrive allows all the others at
once. If the gang does not complete within ``timeoutSeconds`` the waiting members are rejected
(and their nodes freed); if one member fails anywhere after Reserve, Unreserve rejects the
others. Rejected members go back to the queue and are retried when a pod is added (another member
may have arrived).

Pods without the gang label pass straight through. Members are counted per namespace and gang
name. Bound members are remembered (PostBind) so that a member recreated later still completes its
gang; a real plugin would also forget them when they are deleted.

Config::

    pluginConfig:
    - name: Gang
      args: {timeoutSeconds: 30}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.framework import api

GANG_LABEL = "example.com/gang"
SIZE_LABEL = "example.com/gang-size"


class Gang:
    name = "Gang"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        args = dict(args)
        timeout = args.pop("timeoutSeconds", 30)
        if not isinstance(timeout, int | float) or not 0 < timeout <= api.MAX_PERMIT_TIMEOUT_S:
            raise ValueError(f"timeoutSeconds: must be a number in (0, 900], got {timeout!r}")
        if args:
            raise ValueError(f"unknown field(s) {sorted(args)}; known: timeoutSeconds")
        self.timeout_s = float(timeout)
        self.handle = handle
        self.bound: dict[tuple[str, str], set[str]] = {}

    @staticmethod
    def gang_of(pod: api.Pod) -> tuple[str, str] | None:
        gang = pod.labels.get(GANG_LABEL)
        return (pod.namespace, gang) if gang else None

    def _siblings(self, pod: api.Pod, gang: tuple[str, str]) -> list[api.WaitingPod]:
        return [
            wp
            for wp in self.handle.iterate_waiting_pods()
            if wp.pod.uid != pod.uid and self.gang_of(wp.pod) == gang
        ]

    def reserve(self, state: api.CycleState, pod: api.Pod, node_name: str) -> api.Status:
        return api.SUCCESS

    def unreserve(self, state: api.CycleState, pod: api.Pod, node_name: str) -> None:
        gang = self.gang_of(pod)
        if gang is None:
            return
        for wp in self._siblings(pod, gang):
            wp.reject(self.name, f"gang {gang[1]}: member {pod.name} could not be placed")

    def permit(self, state: api.CycleState, pod: api.Pod, node_name: str) -> tuple[api.Status, float]:
        gang = self.gang_of(pod)
        if gang is None:
            return api.SUCCESS, 0
        text = pod.labels.get(SIZE_LABEL, "")
        if not text.isdigit() or int(text) < 1:
            return api.unschedulable(f"label {SIZE_LABEL} must be a positive integer, got {text!r}"), 0
        waiting = self._siblings(pod, gang)
        if len(waiting) + 1 + len(self.bound.get(gang, ())) >= int(text):
            for wp in waiting:
                wp.allow(self.name)
            return api.SUCCESS, 0
        return api.wait(), self.timeout_s

    def post_bind(self, state: api.CycleState, pod: api.Pod, node_name: str) -> None:
        gang = self.gang_of(pod)
        if gang is not None:
            self.bound.setdefault(gang, set()).add(pod.uid)

    def events_to_register(self) -> Sequence[api.ClusterEventSpec]:
        return [api.cluster_event("Pod", "Add")]
