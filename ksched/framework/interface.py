"""The plugin contract: status codes, per-cycle state, and one Protocol per extension point.

Plugins are vectorized: a Filter answers for every row of the node table at once, a Score scores
every row at once. Rows are ``[0, cluster.nodes.n_rows)``; rows that hold no node, or that an
earlier stage ruled out, are masked by the runtime, so a plugin may compute garbage there.

- **Filter** returns a :class:`FilterResult`: a ``uint64`` failure bitset per row (0 = the node
  passes) and, per bit, the reason string and status code. Several bits may be set on one row
  (NodeResourcesFit reports "Insufficient cpu" and "Insufficient memory" together). ``failed=None``
  means every node passes, which costs nothing.
- **Score** returns raw ``int64`` scores for every row, or a plain ``int`` when every node scores the
  same. **NormalizeScore** (optional) maps raw scores of the feasible rows to 0..100.
- **PreFilter / PreScore** run once per cycle; returning ``Code.SKIP`` skips the plugin's Filter /
  Score for this cycle, exactly like upstream.

Plugins must not mutate the cluster (its arrays are read-only; what-if questions go through the
cache's overlay, ``ClusterReader.what_if``), block, or do I/O: a cycle reads live arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ksched.framework.best_rows import BestRows

if TYPE_CHECKING:
    from ksched.cache.reader import ClusterReader
    from ksched.framework.result import CycleResult
    from ksched.model.pod import Pod

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    """Upstream's status codes, same order."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def is_rejection(self) -> bool:
        return self in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def label(self) -> str:
        """Upstream's ``Code.String()``: the ``status`` label of the duration metrics."""
        return _CODE_LABELS[self]


_CODE_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class QueueingHint(IntEnum):
    """Upstream's ``QueueingHint``: what a plugin's hint function says about one cluster event for
    a pod the plugin rejected: move it back to the queue, or leave it parked."""

    QUEUE_SKIP = 0
    QUEUE = 1


HintFn = Callable[["Pod", object, object], QueueingHint]
"""A hint function: ``fn(pod, old, new)`` with the event's old and new objects (None when there is
none: an Add has no old object, a Delete no new one). A wrong object type answers QUEUE, as
upstream's queue does when a hint returns an error."""


@dataclass(frozen=True, slots=True)
class Status:
    """The outcome of one plugin call; ``plugin`` is filled in by the runtime."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def is_pending_pre_bind(value: object) -> bool:
    """Whether ``value`` is a PendingPreBind (:mod:`ksched.framework.api`): it has ``set_waker``,
    ``poll`` and ``next_poll_at`` methods."""
    return all(callable(getattr(value, m, None)) for m in ("set_waker", "poll", "next_poll_at"))


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    """A rejection; ``resolvable=False`` means preemption cannot help."""
    return Status(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def error(message: str) -> Status:
    return Status(Code.ERROR, (message,))


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Restricts Filter to the named nodes (``None``: all nodes), like upstream's PreFilterResult."""

    node_names: frozenset[str] | None = None


@dataclass(slots=True)
class FilterResult:
    """Per-row failure bits from one Filter plugin.

    Bit ``i`` of ``failed[row]`` set means the node fails with ``reasons[i]`` and code
    ``codes[i]``. ``failed`` is None when every node passes.

    ``passed`` (optional, for speed) is a fresh bool array of ``n_rows`` rows equal to
    ``cluster.nodes.valid[:n_rows] & (failed == 0)``, with ``n_passed`` its count: a plugin that
    sweeps every row anyway can produce it for almost nothing, and the runtime then takes it over
    as the feasible mask instead of running a pass of its own (it may mutate it).
    """

    failed: np.ndarray | None
    reasons: tuple[str, ...] = ()
    codes: tuple[Code, ...] = ()
    passed: np.ndarray | None = None
    n_passed: int = -1

    @classmethod
    def all_pass(cls) -> FilterResult:
        """The shared "every node passes" result (do not mutate it): most filters return it for
        most pods, and a cycle of tens of microseconds cannot afford an allocation per filter."""
        return _ALL_PASS

    @classmethod
    def from_mask(cls, fails: np.ndarray, reason: str, code: Code) -> FilterResult:
        """A single-reason result from a boolean "fails here" mask."""
        return cls(fails.astype(np.uint64), (reason,), (code,))

    def reasons_at(self, row: int) -> tuple[list[str], Code]:
        """Reason strings and the most severe code for one row (empty list: passes)."""
        if self.failed is None:
            return [], Code.SUCCESS
        bits = int(self.failed[row])
        out: list[str] = []
        code = Code.SUCCESS
        i = 0
        while bits:
            if bits & 1:
                out.append(self.reasons[i])
                if code != Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    code = self.codes[i]
            bits >>= 1
            i += 1
        return out, code


_ALL_PASS = FilterResult(None)


@dataclass(slots=True)
class CycleState:
    """Data one cycle's plugins share; keys are prefixed with the plugin name.

    ``score_weights`` is the profile's Score plugin weights (read-only, by plugin name), so a plugin
    can precompute a weighted choice (:class:`BestRows`); ``best_rows`` is where it leaves it.
    """

    data: dict[str, Any] = field(default_factory=dict)
    skip_filter: set[str] = field(default_factory=set)
    skip_score: set[str] = field(default_factory=set)
    skip_pre_bind: set[str] = field(default_factory=set)
    """PreBind plugins whose PreBindPreFlight said Skip: their PreBind is not called."""
    score_weights: Mapping[str, int] = field(default_factory=dict)
    best_rows: BestRows | None = None
    sampled: bool = False
    """Whether this cycle times its plugin calls (upstream ``ShouldRecordPluginMetrics``); the
    binding cycle reads it too, so one pod's plugin calls are timed all or none."""

    def read(self, key: str) -> Any:
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value


Scores = np.ndarray | int


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        """Raw scores for every row; ``feasible`` is the boolean row mask of candidate nodes."""
        ...


@runtime_checkable
class NormalizeScorePlugin(Plugin, Protocol):
    def normalize_score(
        self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray
    ) -> Scores: ...


class PodGatedPlugin(Plugin, Protocol):
    """Optional: a plugin that does nothing for pods lacking one feature says which.

    ``skips_pods_without`` names a :class:`~ksched.model.pod.Pod` attribute; on every pod where it
    is falsy the plugin's PreFilter returns ``(None, SKIP)`` and its PreScore returns ``SKIP``.
    The runtime then does not call them for such pods (it skips Filter / Score exactly as if
    they had returned Skip), and checks each attribute once per cycle however many plugins share
    it: the four volume plugins, DynamicResources and the pending stand-ins cost a call or three
    each per cycle otherwise. A unit test checks every declaration against the real methods.
    For binding-cycle plugins the promise covers their binding points too
    (:class:`ksched.framework.hooks.PodGated`).
    """

    skips_pods_without: str


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a PostFilter (preemption) decided for a pod no node could take.

    ``nominated_node`` is the node the pod should wait for ("" when preemption cannot help) and
    ``victims`` the pods to evict there. ``status`` is SUCCESS with a nomination, otherwise the
    rejection whose message is upstream's ``preemption: ...`` suffix of the FitError message.
    """

    nominated_node: str = ""
    victims: tuple[Pod, ...] = ()
    status: Status = SUCCESS
    keep_nomination: bool = False
    """Leave the pod's nomination as it is (upstream returns a nil PostFilterResult: the pod is not
    eligible to preempt, or an error occurred); False means set it to ``nominated_node``, which
    clears it when that is empty (upstream ``ModeOverride``)."""


class NominatedPods(Protocol):
    """The queue's view of pods nominated to nodes (upstream's PodNominator), read-only."""

    def pods_for_node(self, node_name: str) -> list[Pod]: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self,
        state: CycleState,
        pod: Pod,
        cluster: ClusterReader,
        result: CycleResult,
        nominated: NominatedPods | None,
    ) -> PostFilterResult:
        """Called only after a cycle found no feasible node (``result``)."""
        ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, priority: int, enqueued_at: float) -> tuple[Any, ...]:
        """Smaller keys pop first."""
        ...


def detail_for(plugin: object, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
    """Optional extra explanation a plugin can give for one rejected row (``explain_row``)."""
    fn = getattr(plugin, "explain_row", None)
    return fn(pod, cluster, row) if fn is not None else None
