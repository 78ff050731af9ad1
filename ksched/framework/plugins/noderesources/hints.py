"""NodeResourcesFit's queueing hints: pure functions of the rejected pod and the event's objects.

Upstream: ``fit.go`` (``isSchedulableAfterPodEvent``, ``isSchedulableAfterPodScaleDown``,
``isSchedulableAfterNodeChange``, ``haveAnyRequestedResourcesIncreased``, ``isFit``), with
InPlacePodVerticalScaling on and DRAExtendedResource off, as in v1.35's defaults. An object of the
wrong type answers QUEUE, as upstream's queue does when a hint returns an error.

What upstream reads, and what these read instead:

- A pod's request is ``Pod.requests`` (upstream ``PodRequests``: containers, sidecars, init peak,
  pod-level requests, overhead). Upstream's scale-down check also folds in the resources the
  kubelet reports in ``status.containerStatuses``; the record holds the spec only, so a resize in
  flight answers QUEUE at the spec change, never later than upstream.
- "Fits the node" is upstream's ``isFit``: the node alone, with no pod on it, checked with
  ``Fits`` and *no* ignored resources. NodeResourcesFit's ``ignoredResources`` and
  ``ignoredResourceGroups`` are Filter-only upstream; the hint checks every resource the pod
  requests, so these functions take no args.
- Only cpu, memory, ephemeral-storage and scalar resources (extended, hugepages,
  ``*kubernetes.io/*``, attachable volumes) count, as in upstream's ``framework.Resource``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ksched.framework.interface import QueueingHint
from ksched.framework.plugins.noderesources.resource_pass import is_scalar
from ksched.model.node import Node
from ksched.model.pod import Pod
from ksched.model.resources import FIXED_COLUMNS, PODS

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP


def _counted(name: str, value: int) -> bool:
    """Whether upstream's ``framework.Resource`` keeps this request (a positive one it models)."""
    return value > 0 and (name in FIXED_COLUMNS or is_scalar(name))


def fits(pod: Pod, node: Node) -> bool:
    """Upstream ``isFit``: the pod fits the empty node (room for one pod, every request)."""
    alloc = node.allocatable
    if alloc.get(PODS, 0) < 1:
        return False
    return all(v <= alloc.get(k, 0) or not _counted(k, v) for k, v in pod.requests.items())


def _any_grew(requests: Mapping[str, int], before: Mapping[str, int], after: Mapping[str, int]) -> bool:
    """Some resource in ``requests`` has more in ``after`` than in ``before``."""
    return any(after.get(k, 0) > before.get(k, 0) and _counted(k, v) for k, v in requests.items())


def requested_grew(pod: Pod, old: Node, new: Node) -> bool:
    """Upstream ``haveAnyRequestedResourcesIncreased``: more pods allowed, or more of a resource
    the pod requests."""
    if new.allocatable.get(PODS, 0) > old.allocatable.get(PODS, 0):
        return True
    return _any_grew(pod.requests, old.allocatable, new.allocatable)


def scaled_down_for(pod: Pod, old: Pod, new: Pod) -> bool:
    """Upstream ``isSchedulableAfterPodScaleDown``: the pod itself, or an assigned pod whose
    request of something the pod requests went down."""
    if new.uid == pod.uid:
        return True
    if not new.node_name:
        return False
    return _any_grew(pod.requests, new.requests, old.requests)


def after_pod_event(pod: Pod, old: object, new: object) -> QueueingHint:
    """A deleted pod that was assigned or nominated, or a scale-down that frees what the pod needs."""
    if (old is not None and not isinstance(old, Pod)) or (new is not None and not isinstance(new, Pod)):
        return QUEUE
    if new is None:
        if old is None:
            return QUEUE
        return QUEUE if old.node_name or old.nominated_node_name else SKIP
    if old is None:
        return QUEUE  # an update event always carries the old object; be safe without one
    return QUEUE if scaled_down_for(pod, old, new) else SKIP


def after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """A new node the pod fits, or an updated one it now fits with more of what it requests."""
    if (old is not None and not isinstance(old, Node)) or (new is not None and not isinstance(new, Node)):
        return QUEUE
    if new is None or not fits(pod, new):
        return SKIP  # upstream's isFit is false for a missing node
    if old is None:
        return QUEUE
    return QUEUE if requested_grew(pod, old, new) else SKIP


__all__ = ["after_node_change", "after_pod_event", "fits", "requested_grew", "scaled_down_for"]
