"""Acting on preemption: nominate the preemptor, evict its victims, let it retry once they are gone.

Upstream: ``pkg/scheduler/schedule_one.go`` (which failures run PostFilter, what becomes of the
nomination), ``pkg/scheduler/framework/preemption/executor.go`` (``prepareCandidateAsync``,
``PreemptPod``) and reference §1.6 and §8. The decision itself (which node, which victims) is the
DefaultPreemption plugin's; this module carries it out from the scheduling loop.

**On the scheduling thread** (:class:`Preemption`): after a cycle that found no node,
:meth:`Preemption.after_failure` runs the profile's PostFilter plugins when upstream would (a
FitError, i.e. a rejection with nodes in the cluster) and says what becomes of the pod's
nomination: upstream's ``NominatingInfo`` is ``""`` (clear), a node name (set) or ``None`` (leave
it; upstream's nil PostFilterResult). With a nomination and victims it marks the preemptor as
preempting (DefaultPreemption's PreEnqueue holds it back meanwhile), counts the metrics and hands a
:class:`PreemptionJob` to the outbox. The loop then writes the nomination into the queue's
nominator and, with the ``PodScheduled=False`` condition, into ``status.nominatedNodeName``.

**On the I/O loop** (:func:`carry_out`), as upstream's asynchronous preemption does: clear the
nominations of lower-priority pods on the node, then evict every victim but the last concurrently,
then the last. Evicting one victim is: patch ``DisruptionTarget=True`` (reason
``PreemptionByScheduler``), DELETE it, record a ``Preempted`` event on it. A victim already gone
(404 on the patch or the delete, or a uid precondition that no longer matches: the name now belongs
to another pod) is fine and gets no event. When the work ends a :class:`PreemptionDone` goes to the
inbox; the loop then releases the preemptor, and activates it on an error (it could otherwise wait
in the unschedulable pool for a deletion that never happens) or when the PreEnqueue hold parked it.

The preemptor retries when its victims' deletions arrive as ``AssignedPodDelete`` events (the
rejecting plugins, e.g. NodeResourcesFit, register pod deletions). A nomination that has gone
stale is cleared: when the pod is bound (to whatever node; kube-apiserver 1.35 clears it itself on
binding, older servers and the sim do not) and when its nominated node is deleted.

A victim held at Permit (in the profile's ``waiting_pods``) is rejected with ``preempted`` instead
of deleted, as upstream does. Not guaranteed: a nomination patch that fails
after the client's retries is lost until the pod's next failure writes it again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ksched.cache.cluster import ClusterCache
from ksched.errors import Conflict, NotFound
from ksched.framework.interface import Code, PostFilterResult
from ksched.framework.messages import fit_error_message
from ksched.framework.result import CycleResult
from ksched.framework.runtime import Framework
from ksched.kube.writers import event_body, pod_reference
from ksched.metrics import Metrics
from ksched.model.pod import Pod
from ksched.scheduler.inbox import PreemptionDone
from ksched.scheduler.queue import SchedulingQueue
from ksched.scheduler.reporting import Failure, rfc3339

log = logging.getLogger(__name__)

DEFAULT_PREEMPTION: Final = "DefaultPreemption"
CONDITION_DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
EVENT_PREEMPTED: Final = "Preempted"
ACTION_PREEMPTING: Final = "Preempting"


def disruption_message(scheduler_name: str) -> str:
    """The ``DisruptionTarget`` condition's message (upstream ``PreemptPod``)."""
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


def preempted_note(preemptor_uid: str, node: str) -> str:
    """The ``Preempted`` event's note on a victim (upstream ``PreemptPod``)."""
    return f"Preempted by pod {preemptor_uid} on node {node}"


def disruption_patch(scheduler_name: str, now: float) -> dict[str, Any]:
    """Strategic merge patch adding ``DisruptionTarget=True`` (conditions merge by ``type``)."""
    condition = {
        "type": CONDITION_DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": disruption_message(scheduler_name),
        "lastTransitionTime": rfc3339(now),
    }
    return {"status": {"conditions": [condition]}}


def clear_nomination_patch() -> dict[str, Any]:
    """Strategic merge patch removing ``status.nominatedNodeName`` (``null`` deletes the field)."""
    return {"status": {"nominatedNodeName": None}}


# ---------------------------------------------------------------------------------------------- the work
@dataclass(frozen=True, slots=True)
class Eviction:
    """One victim: the condition patch to send first and the event to record once it is deleted."""

    victim: Pod
    condition_patch: dict[str, Any]
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PreemptionJob:
    """Everything the I/O side does for one preemption; built on the scheduling thread."""

    preemptor: Pod
    node: str
    evictions: tuple[Eviction, ...]
    clear_nominations: tuple[Pod, ...] = ()
    """Lower-priority pods nominated to ``node`` whose nomination upstream clears."""


class EvictionApi(Protocol):
    """The writes :func:`carry_out` needs (the outbox provides them on the I/O loop)."""

    async def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        """Patch ``pods/NAME/status``; raises :class:`NotFound` when the pod is gone."""

    async def delete_pod(self, pod: Pod) -> bool:
        """DELETE with a uid precondition; False (or :class:`NotFound` / :class:`Conflict`) when gone."""

    def record_event(self, body: dict[str, Any]) -> None:
        """Queue an event (best effort, never raises)."""


async def carry_out(job: PreemptionJob, api: EvictionApi, done: Callable[[PreemptionDone], None]) -> None:
    """Upstream's asynchronous preemption goroutine; always ends by calling ``done``.

    Lower-priority nominations are cleared first (a failure there is noted, not fatal); then every
    victim but the last is evicted concurrently and, unless one of them failed, the last one.
    """
    error: Exception | None = None
    started = time.monotonic()
    try:
        for pod in job.clear_nominations:
            try:
                await api.patch_pod_status(pod, clear_nomination_patch())
            except NotFound:
                pass
            except Exception as exc:
                log.warning("could not clear the nomination of pod %s: %s", pod.key, exc)
                error = error or exc
        evictions = job.evictions
        evict_last = bool(evictions)
        if len(evictions) > 1:
            results = await asyncio.gather(
                *(_evict(job, e, api) for e in evictions[:-1]), return_exceptions=True
            )
            failed = next((r for r in results if isinstance(r, BaseException)), None)
            if failed is not None:
                error = failed if isinstance(failed, Exception) else _EvictionFailed(repr(failed))
                evict_last = False
        if evict_last:
            await _evict(job, evictions[-1], api)
    except _EvictionFailed as exc:
        error = exc
    except Exception as exc:  # a bug here must still release the preemptor
        log.exception("preemption for pod %s failed", job.preemptor.key)
        error = exc
    finally:
        done(PreemptionDone(job.preemptor, job.node, error, time.monotonic() - started))


class _EvictionFailed(Exception):
    """A victim could not be evicted (not counting one that is already gone)."""


async def _evict(job: PreemptionJob, eviction: Eviction, api: EvictionApi) -> None:
    victim = eviction.victim
    try:
        await api.patch_pod_status(victim, eviction.condition_patch)
        if not await api.delete_pod(victim):
            raise NotFound(404, "NotFound", f"pods {victim.name!r} not found")
    except (NotFound, Conflict) as exc:
        # 404: already deleted. 409 on a DELETE is the uid precondition: the name is another pod's now.
        log.info("victim %s of pod %s is already gone: %s", victim.key, job.preemptor.key, exc)
        return
    except Exception as exc:
        log.error(
            "could not preempt pod %s for pod %s on node %s: %s", victim.key, job.preemptor.key, job.node, exc
        )
        raise _EvictionFailed(f"preempting pod {victim.key}: {exc}") from exc
    log.info("pod %s preempted pod %s on node %s", job.preemptor.key, victim.key, job.node)
    api.record_event(eviction.event)


# ---------------------------------------------------------------------------------------------- the loop side
class PreemptionSink(Protocol):
    """The outbox calls :class:`Preemption` makes (the loop's :class:`~ksched.scheduler.binder.Outbox`)."""

    def preempt(self, job: PreemptionJob) -> None:
        """Start :func:`carry_out` for ``job``; a :class:`PreemptionDone` arrives in the inbox later."""

    def patch_status(self, pod: Pod, patch: dict[str, Any]) -> None: ...

    def event(self, body: dict[str, Any]) -> None: ...


class Preemption:
    """The scheduling loop's part of preemption (scheduling thread only)."""

    def __init__(
        self,
        *,
        queue: SchedulingQueue,
        outbox: PreemptionSink,
        pending: Mapping[str, Pod],
        metrics: Metrics | None,
        wall_clock: Callable[[], float],
        instance: str,
    ) -> None:
        self.queue = queue
        self.outbox = outbox
        self.pending = pending
        """The informer's latest view of pending pods (the loop's handlers own it)."""
        self.metrics = metrics
        self.wall_clock = wall_clock
        self.instance = instance
        self.in_progress: dict[str, str] = {}
        """Preemptor uid -> profile, while its victims are being evicted."""
        self._written: dict[str, str] = {}
        """Pods whose ``status.nominatedNodeName`` we set (the informer may not have shown it yet)."""

    # ------------------------------------------------------------------ after a failed cycle
    def after_failure(
        self, fw: Framework, result: CycleResult, cache: ClusterCache, failure: Failure
    ) -> tuple[Failure, str | None]:
        """Run PostFilter if upstream would; returns the failure to report and the nomination.

        The nomination is ``""`` to clear it, a node name to set it, or ``None`` to leave it as it
        is. Upstream clears it after every failure except a FitError whose PostFilter returned a
        nil result (for instance a preemptor still waiting for its victims).
        """
        pod = result.pod
        code = result.status.code
        if code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE) or result.num_all_nodes == 0:
            return failure, ""
        if not fw.post_filter_plugins:
            return failure, ""
        try:
            pf = fw.run_post_filter(pod, cache, result, nominated=self.queue.nominator)
        except Exception:  # a plugin bug must not take the loop down: no preemption this time
            log.exception("PostFilter failed for pod %s", pod.key)
            return failure, None
        finally:
            if self.metrics is not None and DEFAULT_PREEMPTION in fw.plugins:
                self.metrics.preemption_attempts.inc()
        if pf is None:  # no PostFilter plugin after all
            return failure, ""
        reason, _message, plugins = failure
        msg = pf.status.message
        if msg:
            # DefaultPreemption's text gets upstream's "preemption: " prefix; with DynamicResources in
            # front the aggregated status may name that plugin, so go by the profile, not the status.
            by = DEFAULT_PREEMPTION if DEFAULT_PREEMPTION in fw.plugins else pf.status.plugin
            failure = (reason, fit_error_message(result, msg, by), plugins)
        if pf.status.code == Code.ERROR:
            log.error("PostFilter for pod %s: %s", pod.key, msg)
            return failure, None
        if pf.keep_nomination:
            return failure, None
        if pf.nominated_node:
            self._start(fw, pod, pf)
        return failure, pf.nominated_node

    def _start(self, fw: Framework, pod: Pod, pf: PostFilterResult) -> None:
        """Evict ``pf.victims``: reject those waiting on Permit, hand the rest to the outbox."""
        node = pf.nominated_node
        victims = [v for v in pf.victims if not v.deleting]  # the others are on their way out already
        if not victims:
            return
        if self.metrics is not None:
            self.metrics.preemption_victims.observe(len(pf.victims))
        now = self.wall_clock()
        reject_waiting = getattr(getattr(fw, "waiting_pods", None), "reject", None)
        evictions = []
        for v in victims:
            event = self._event(pod, v, node, now)
            if reject_waiting is not None and reject_waiting(v.uid, DEFAULT_PREEMPTION, "preempted"):
                log.info("pod %s preempted pod %s waiting on Permit on node %s", pod.key, v.key, node)
                self.outbox.event(event)
                continue
            evictions.append(Eviction(v, disruption_patch(pod.scheduler_name, now), event))
        if not evictions:
            return
        lower = []
        for other in self.queue.nominator.pods_for_node(node):
            if other.uid == pod.uid or other.priority >= pod.priority:
                continue
            latest = self.pending.get(other.uid, other)
            if latest.nominated_node_name:
                lower.append(latest)
        mark = getattr(fw.plugins.get(DEFAULT_PREEMPTION), "mark_preempting", None)
        if mark is not None:
            mark(pod.uid)
        self.in_progress[pod.uid] = fw.profile
        log.info(
            "pod %s nominated to node %s: preempting %s",
            pod.key,
            node,
            ", ".join(e.victim.key for e in evictions),
        )
        self.outbox.preempt(PreemptionJob(pod, node, tuple(evictions), tuple(lower)))

    def _event(self, preemptor: Pod, victim: Pod, node: str, now: float) -> dict[str, Any]:
        """The ``Preempted`` event on ``victim``, related to the preemptor (upstream's recorder)."""
        controller = preemptor.scheduler_name
        return event_body(
            regarding=pod_reference(victim.namespace, victim.name, victim.uid),
            related=pod_reference(preemptor.namespace, preemptor.name, preemptor.uid),
            reason=EVENT_PREEMPTED,
            note=preempted_note(preemptor.uid, node),
            action=ACTION_PREEMPTING,
            event_type="Normal",
            now=dt.datetime.fromtimestamp(now, tz=dt.UTC),
            reporting_controller=controller,
            reporting_instance=f"{controller}-{self.instance}",
        )

    # ------------------------------------------------------------------ the API work ended
    def done(self, item: PreemptionDone, profiles: Mapping[str, Framework]) -> None:
        """Release the preemptor; activate it after an error or when the PreEnqueue hold parked it."""
        uid = item.preemptor.uid
        profile = self.in_progress.pop(uid, item.preemptor.scheduler_name)
        fw = profiles.get(profile)
        plugin = fw.plugins.get(DEFAULT_PREEMPTION) if fw is not None else None
        release = getattr(plugin, "done_preempting", None)
        if release is not None:
            release(uid)
        if self.metrics is not None:
            result = "success" if item.error is None else "error"
            self.metrics.preemption_goroutines_execution.labels(result=result).inc()
            self.metrics.preemption_goroutines_duration.labels(result=result).observe(item.seconds)
        pinfo = self.queue.get(uid)
        if item.error is not None:
            log.warning(
                "preemption for pod %s on node %s failed, retrying it: %s",
                item.preemptor.key,
                item.node,
                item.error,
            )
            self.queue.activate([uid])
        elif pinfo is not None and pinfo.gating_plugin == DEFAULT_PREEMPTION:
            self.queue.activate([uid])

    # ------------------------------------------------------------------ stale nominations
    def nominate(self, pod: Pod | None, nominating: str | None) -> None:
        """Record the nomination in the queue's nominator (upstream ``AddNominatedPod``)."""
        if pod is None:
            return
        self.queue.nominator.add(pod, nominating)
        if nominating:
            self._written[pod.uid] = nominating
        elif nominating == "":
            self._written.pop(pod.uid, None)

    def forget(self, uid: str) -> None:
        """The pod is gone: drop what was kept for clearing its nomination (it would never be bound)."""
        self._written.pop(uid, None)

    def bound(self, pod: Pod) -> None:
        """``pod`` was bound: clear a nomination its status still carries (whatever node it names)."""
        written = self._written.pop(pod.uid, None)
        if pod.nominated_node_name or written:
            self.outbox.patch_status(pod, clear_nomination_patch())


def forget_nominations_to(queue: SchedulingQueue, node: str) -> list[Pod]:
    """Forget every nomination to the deleted ``node``; returns the pods whose status to clear."""
    pods = queue.nominator.pods_for_node(node)
    for pod in pods:
        queue.nominator.delete(pod.uid)
    return pods


__all__ = [
    "ACTION_PREEMPTING",
    "CONDITION_DISRUPTION_TARGET",
    "EVENT_PREEMPTED",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "EvictionApi",
    "Preemption",
    "PreemptionJob",
    "carry_out",
    "clear_nomination_patch",
    "disruption_message",
    "disruption_patch",
    "forget_nominations_to",
    "preempted_note",
]
