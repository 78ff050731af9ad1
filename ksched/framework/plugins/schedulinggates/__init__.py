"""SchedulingGates: a pod with ``spec.schedulingGates`` is not scheduled until they are removed.

Upstream: ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go``. It acts at
PreEnqueue, before any cycle: the queue keeps a gated pod out and reports this message.
"""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import SUCCESS, ClusterEventSpec, Code, Handle, Status, cluster_event
from ksched.framework.interface import HintFn
from ksched.framework.plugins.schedulinggates import hints
from ksched.model.pod import Pod

NAME: Final = names.SCHEDULING_GATES


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        gates = " ".join(pod.scheduling_gates)
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"waiting for scheduling gates: [{gates}]",), NAME
        )

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: the pod's last gate removed."""
        return {cluster_event("Pod", "UpdatePodSchedulingGatesEliminated"): hints.after_gates_eliminated}


def new(args: Any, handle: Handle) -> SchedulingGates:
    return SchedulingGates()


__all__ = ["NAME", "SchedulingGates", "new"]
