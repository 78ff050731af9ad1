"""What the scheduler tells the API about a pod: Events and the ``PodScheduled`` condition.

Texts follow upstream exactly (reference §9): ``Scheduled`` / ``Successfully assigned NS/NAME to
NODE`` on success; ``FailedScheduling`` with the FitError message on failure, the event note
truncated to 1024 bytes with a trailing `` ...``, the condition carrying the message up to
:data:`~ksched.model.limits.CONDITION_MESSAGE_BYTES` (cut ones say how many bytes were left out); reason
``Unschedulable`` for rejections and ``SchedulerError`` for everything else. Events are written
through ``events.k8s.io/v1`` with the profile's scheduler name as the reporting controller, as
kube-scheduler's event recorder does; ``regarding`` is the pod's reference with its
resourceVersion (client-go's ``GetReference``). The outbox folds repeats into series by that
reference (:mod:`ksched.kube.event_series`), so a pod's first FailedScheduling (before the
scheduler's own status patch changed the pod) and its later ones are two Events, as with
kube-scheduler. The ``PodScheduled`` patch follows ``UpdatePodCondition``: see
:func:`scheduled_condition`.

:class:`Reporter` builds them and hands them to the outbox, which sends them without ever
blocking scheduling.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Final, Protocol

from ksched.kube.writers import event_body, pod_reference
from ksched.model.limits import CONDITION_MESSAGE_BYTES, NOTE_BYTES, bound_text, truncate_note
from ksched.model.pod import Pod

NOTE_LENGTH_LIMIT: Final = NOTE_BYTES
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"
REASON_SCHEDULING_GATED: Final = "SchedulingGated"
EVENT_SCHEDULED: Final = "Scheduled"
EVENT_FAILED_SCHEDULING: Final = "FailedScheduling"
ACTION_BINDING: Final = "Binding"
ACTION_SCHEDULING: Final = "Scheduling"
POD_SCHEDULED: Final = "PodScheduled"

Failure = tuple[str, str, set[str]]
"""(condition reason, message, rejecting plugins): how the loop reports a pod that was not placed."""


def rfc3339(ts: float, *, micro: bool = False) -> str:
    when = dt.datetime.fromtimestamp(ts, tz=dt.UTC)
    if micro:
        return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_message(message: str) -> str:
    """A condition message as ksched writes it: at most :data:`CONDITION_MESSAGE_BYTES`."""
    return bound_text(message, CONDITION_MESSAGE_BYTES)


def scheduled_message(pod: Pod, node: str) -> str:
    return f"Successfully assigned {pod.namespace}/{pod.name} to {node}"


def deleting_message(pod: Pod) -> str:
    return f"skip schedule deleting pod: {pod.namespace}/{pod.name}"


def scheduled_condition(pod: Pod, reason: str, message: str, now: float) -> tuple[bool, dict[str, Any]]:
    """``PodScheduled=False`` with ``reason``/``message`` against the pod's current condition, as
    upstream's ``UpdatePodCondition`` and ``PatchPodStatus`` (a two-way strategic merge patch)
    treat it: (whether the condition changes, the condition's entry in the patch).

    - No condition yet: the whole condition, ``lastTransitionTime`` now, ``lastProbeTime`` null.
    - A condition whose status differs: ``lastTransitionTime`` is now; with the same status it
      keeps the old one, so the patch leaves it out.
    - Only fields that differ are in the entry (with the merge key ``type``): the status,
      reason, message (bounded: :func:`condition_message`), and ``observedGeneration``, which
      is the pod's ``metadata.generation`` (PodObservedGenerationTracking is GA in 1.35).
      ``lastProbeTime`` is never set by the scheduler or the API server, so an existing
      condition's is null already.
    - Whether it changes ignores ``observedGeneration``, as upstream's comparison does: a new
      generation alone writes nothing.
    """
    message = condition_message(message)
    old = pod.scheduled_condition
    generation = pod.generation
    if old is None:
        entry = _new_condition(reason, message, now)
        if generation:
            entry["observedGeneration"] = generation
        return True, entry
    status, old_reason, old_message = old
    entry = {"type": POD_SCHEDULED}
    if status != "False":
        entry["status"] = "False"
        entry["lastTransitionTime"] = rfc3339(now)
    if reason != old_reason:
        entry["reason"] = reason
    if message != old_message:
        entry["message"] = message
    changed = len(entry) > 1
    if generation != pod.scheduled_observed_generation:
        entry["observedGeneration"] = generation or None
    return changed, entry


def scheduled_condition_patch(
    pod: Pod, reason: str, message: str, now: float, *, nominated: str | None = None
) -> dict[str, Any] | None:
    """The status patch upstream's ``updatePod`` sends after a failed attempt, or None when it
    sends none: neither the condition (:func:`scheduled_condition`) nor the nominated node
    changes. ``nominated`` (NominatingInfo in Override mode) sets ``status.nominatedNodeName``
    when it differs from the pod's (``""`` removes it); None leaves it alone."""
    changed, entry = scheduled_condition(pod, reason, message, now)
    renominate = nominated is not None and nominated != pod.nominated_node_name
    if not changed and not renominate:
        return None
    status: dict[str, Any] = {}
    if len(entry) > 1:
        status["conditions"] = [entry]
    if renominate:
        status["nominatedNodeName"] = nominated or None
    return {"status": status}


class PodLike(Protocol):
    namespace: str
    name: str
    uid: str


class StatusSink(Protocol):
    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None: ...

    def event(self, body: dict[str, Any]) -> None: ...


def _never_drops(event_type: str) -> bool:
    return False


class Reporter:
    """Turns scheduling outcomes into Events and ``PodScheduled`` patches for the outbox."""

    def __init__(self, sink: StatusSink, *, wall_clock: Callable[[], float], instance: str) -> None:
        self.sink = sink
        self.wall_clock = wall_clock
        self.instance = instance
        # Optional on the sink: whether it would drop an event of this type right now, so that
        # the body (timestamps, nested dicts) is not built for nothing.
        self._would_drop: Callable[[str], bool] = getattr(sink, "would_drop", _never_drops)

    def event(
        self, pod: PodLike, controller: str, event_type: str, reason: str, action: str, note: str
    ) -> None:
        """Record an Event about ``pod``; ``controller`` is the profile's scheduler name. Events are
        best effort: one the sink would drop anyway is not built (at thousands of binds per second
        the Scheduled events far outrun the event rate limit)."""
        if self._would_drop(event_type):
            return
        version = pod.resource_version if isinstance(pod, Pod) else ""
        body = event_body(
            regarding=pod_reference(pod.namespace, pod.name, pod.uid, version),
            reason=reason,
            note=truncate_note(note),
            action=action,
            event_type=event_type,
            now=dt.datetime.fromtimestamp(self.wall_clock(), tz=dt.UTC),
            reporting_controller=controller,
            reporting_instance=f"{controller}-{self.instance}",
        )
        self.sink.event(body)

    def not_scheduled(self, pod: Pod, reason: str, message: str, *, nominated: str | None = None) -> None:
        """Set ``PodScheduled=False`` with ``reason``/``message`` unless the pod already says so.

        ``nominated`` (upstream's NominatingInfo in Override mode) goes into the same patch as
        ``status.nominatedNodeName`` when it differs from the pod's (``""`` removes it); None
        leaves the field alone.
        """
        patch = scheduled_condition_patch(pod, reason, message, self.wall_clock(), nominated=nominated)
        if patch is not None:
            self.sink.patch_status(pod, patch)

    def expected_on(self, pod: Pod, node: str) -> None:
        """``status.nominatedNodeName = node`` before the binding cycle's long work, unless the pod
        says so already (upstream ``NominatedNodeNameForExpectation``, on in v1.35)."""
        if pod.nominated_node_name != node:
            self.sink.patch_status(pod, {"status": {"nominatedNodeName": node}})

    def not_scheduled_unparsed(self, pod: PodLike, message: str) -> None:
        """The condition for a pod whose spec could not even be read (no record to compare with)."""
        message = condition_message(message)
        self.sink.patch_status(pod, _condition(REASON_SCHEDULER_ERROR, message, self.wall_clock()))


def _condition(reason: str, message: str, now: float) -> dict[str, Any]:
    """The whole ``PodScheduled=False`` condition, for a pod whose current one is not known."""
    return {"status": {"conditions": [_new_condition(reason, message, now)]}}


def _new_condition(reason: str, message: str, now: float) -> dict[str, Any]:
    """A ``PodScheduled=False`` condition written whole: it starts now, and was never probed."""
    return {
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now),
    }
