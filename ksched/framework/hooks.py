"""The optional fast-path hooks a plugin may declare, beside its extension-point methods.

A hook is a promise a plugin makes about itself so that the runtime can do less work. Each is
declared here, once, as a Protocol: what the plugin promises, and what the runtime does with it.
:func:`check_hooks` checks every plugin of a profile against these declarations when the profile
is built, so a hook of the wrong shape is a start-up error naming the plugin, never a surprise in
the middle of a cycle. In-tree and out-of-tree plugins declare them the same way.

======================  =================================================================
hook                    the runtime then
======================  =================================================================
skips_pods_without      leaves out PreFilter/PreScore (and Filter/Score) for pods without it, and
                        the binding cycle when every binding-cycle plugin declares one they lack
row_local               lets preemption's dry runs share one filter pass between nodes
relevance               batches dry runs over pods the plugin says it does not read
filter_rows             asks only the rows with nominated pods in the nominated-pods pass
filter_rows_key         reuses the last filter_rows answer while the key stays the same
scores_in_range         skips the 0..100 range check of the plugin's scores
explain_row             adds a plugin's own sentence to ``ksched explain``'s node reasons
pre_enqueue             keeps a pod out of the active queue (upstream PreEnqueue)
events_to_register      requeues the pods it rejected only on these cluster events
queueing_hints          says, per registered event, whether it may help one rejected pod
======================  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ksched.errors import ConfigError

if TYPE_CHECKING:
    from ksched.cache.reader import ClusterReader
    from ksched.framework.api import ClusterEventSpec
    from ksched.framework.interface import CycleState, FilterResult, HintFn, Status
    from ksched.framework.row_delta import RowDelta
    from ksched.model.pod import Pod


@runtime_checkable
class PodGated(Protocol):
    """``skips_pods_without``: the name of a :class:`~ksched.model.pod.Pod` attribute.

    Promise: on every pod where that attribute is falsy, PreFilter returns ``(None, SKIP)`` and
    PreScore returns ``SKIP``. The runtime then calls neither for such pods and skips the plugin's
    Filter and Score, checking each attribute once per cycle however many plugins share it.

    A binding-cycle plugin promises more: for such pods Reserve and PreBind succeed doing nothing,
    Permit allows, PreBindPreFlight skips, Unreserve and PostBind do nothing. When every
    binding-cycle plugin of a profile declares an attribute the pod lacks, the pod skips the
    binding cycle and goes straight to the binder (``Framework.needs_binding_cycle``).
    """

    skips_pods_without: str


@runtime_checkable
class BindingWork(Protocol):
    """``binding_work(state, pod) -> bool``, called after the scheduling cycle picked a node.

    Promise: when it returns False, Reserve and PreBind would succeed doing nothing for this pod
    and cycle state, Permit would allow, PreBindPreFlight would skip, Unreserve and PostBind would
    do nothing (VolumeBinding: every claim was fully bound at PreFilter). When no binding-cycle
    plugin has work, the pod goes straight to the binder, as a pod the ``skips_pods_without``
    gates leave out does.
    """

    def binding_work(self, state: CycleState, pod: Pod) -> bool: ...


@runtime_checkable
class RowLocal(Protocol):
    """``row_local = True``: the Filter verdict on a node reads only that node's own row (its
    labels, taints, allocatable, and the requests and ports of the pods on it).

    The runtime then lets preemption's dry runs on several nodes share one filter pass: taking
    pods off one node cannot change another node's verdict. The in-tree row-local filters are
    listed in :data:`ksched.framework.runtime.ROW_LOCAL_FILTERS`.
    """

    row_local: bool


@runtime_checkable
class RelevantPods(Protocol):
    """``relevance(pod, cluster)``: for a Filter that is not row-local, a predicate saying which
    other pods could change its verdict on a node other than through that node's row (None: no
    pod can). It must say True when unsure.

    Pods it calls irrelevant are moved in the row accounting only during batched dry runs and the
    nominated-pods pass; the others get a pass of their own with the cache itself changed.
    """

    def relevance(self, pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool] | None: ...


@runtime_checkable
class RowSubsetFilter(Protocol):
    """``filter_rows(state, pod, cluster, delta)``: the plugin's Filter answer on ``delta.rows``
    only, with ``delta``'s pods counted on those rows (a FilterResult with one entry per row of
    ``delta``). It must equal what :meth:`filter` would answer there with the pods added.

    The nominated-pods pass then asks only the few rows with nominated pods, whatever the size of
    the cluster, instead of re-running the whole profile.
    """

    def filter_rows(
        self, state: CycleState, pod: Pod, cluster: ClusterReader, delta: RowDelta
    ) -> FilterResult: ...


@runtime_checkable
class RowSubsetKey(Protocol):
    """``filter_rows_key(state, pod, cluster)``: everything :meth:`RowSubsetFilter.filter_rows`
    reads of the pod, as one object that is the very same object (``is``) for a later pod that
    would get the same answer; None means never reuse an answer.

    The nominated-pods pass then reuses the last answer while the key, the rows and their
    accounting stay the same.
    """

    def filter_rows_key(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> object: ...


@runtime_checkable
class ScoresInRange(Protocol):
    """``scores_in_range``: the plugin's scores after NormalizeScore are always within 0..100.

    Read after each Score call (a plugin may set it per cycle). The runtime then skips the range
    check that otherwise fails the cycle on an out-of-range score, as upstream's does.
    """

    scores_in_range: bool


@runtime_checkable
class ExplainRow(Protocol):
    """``explain_row(pod, cluster, row)``: a sentence on why the plugin rejected ``row`` beyond
    its reason string (which resource, which taint), or None. Only ``ksched explain`` calls it."""

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None: ...


@runtime_checkable
class PreEnqueue(Protocol):
    """``pre_enqueue(pod)``: upstream's PreEnqueue; a pod any such plugin rejects waits in the
    queue's gated set until a cluster event lets it through."""

    def pre_enqueue(self, pod: Pod) -> Status: ...


@runtime_checkable
class QueueingHints(Protocol):
    """``queueing_hints()``: the plugin's registered events (``api.cluster_event`` specs) with the
    hint function for each (None: every such event may help, upstream's nil ``QueueingHintFn``).

    The events are the ones ``events_to_register`` returns (an event only named here counts as
    registered too). The scheduling queue asks the hint of each registration that matches an
    event, for every pod the plugin rejected, with the event's old and new objects; a pod moves
    when one says Queue, and a hint that raises counts as Queue, as upstream.
    """

    def queueing_hints(self) -> Mapping[ClusterEventSpec, HintFn | None]: ...


_ATTRIBUTES: dict[str, type] = {"skips_pods_without": str, "row_local": bool, "scores_in_range": bool}
_METHODS = (
    "binding_work",
    "relevance",
    "filter_rows",
    "filter_rows_key",
    "explain_row",
    "pre_enqueue",
    "events_to_register",
    "queueing_hints",
)
HOOK_NAMES: tuple[str, ...] = (*_ATTRIBUTES, *_METHODS)


def check_hooks(plugin: object, name: str, where: str) -> None:
    """Raise :class:`ConfigError` at ``where`` when a hook ``plugin`` declares has the wrong shape."""
    for attr, kind in _ATTRIBUTES.items():
        value = getattr(plugin, attr, None)
        if value is not None and not isinstance(value, kind):
            raise ConfigError(where, f'plugin "{name}": hook {attr} must be a {kind.__name__}, got {value!r}')
    for method in _METHODS:
        value = getattr(plugin, method, None)
        if value is not None and not callable(value):
            raise ConfigError(where, f'plugin "{name}": hook {method} must be a method, got {value!r}')
    if getattr(plugin, "filter_rows_key", None) is not None and getattr(plugin, "filter_rows", None) is None:
        raise ConfigError(where, f'plugin "{name}": filter_rows_key without filter_rows has nothing to key')
