"""Guarded execution of out-of-tree plugins: check what they return, count their failures.

Built-in plugins are trusted: the runtime calls them directly and this module costs them nothing.
Every plugin loaded from outside is wrapped in a :class:`GuardedPlugin` when its profile is built.
The wrapper

- hands the plugin a read-only :class:`~ksched.framework.view.ClusterView` instead of the cache;
- checks each result against the contract and raises :class:`InvalidResult` (a
  :class:`~ksched.errors.PluginError`) when it is broken: a score array that is not one number per
  node-table row, not numeric, NaN or infinite on a candidate node; a filter bitset of the wrong
  length or type, or with a bit set that has no reason string; a status that is not a Status. The
  runtime already turns any exception of a plugin call into an ``Error`` status
  (``running "P" filter plugin: ...``), which the scheduler reports on the pod as a
  ``SchedulerError`` condition; the scheduler keeps going;
- converts what is harmless to convert (a bool failure mask to ``uint64``, float scores rounded to
  int64, a FilterResult without codes to ``Unschedulable``) so plugins can stay short;
- counts ``ksched_plugin_errors_total{plugin, extension_point}`` for every exception or invalid
  result, through the profile's recorder. Durations are the runtime's, as for every plugin
  (:mod:`ksched.framework.runtime.timing`).

Score range (0..100 after NormalizeScore) is checked by the runtime for every plugin that does not
declare ``scores_in_range``; the wrapper never declares it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.errors import PluginError
from ksched.framework.interface import (
    Code,
    CycleState,
    FilterResult,
    PreFilterResult,
    Scores,
    Status,
    is_pending_pre_bind,
)
from ksched.framework.runtime.timing import FrameworkRecorder
from ksched.framework.view import ClusterView
from ksched.framework.waiting import MAX_PERMIT_TIMEOUT_S
from ksched.model.pod import Pod

log = logging.getLogger(__name__)
_REJECTIONS = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE})
_SCORE_LIMIT = float(1 << 62)


class InvalidResult(PluginError):
    """A plugin returned something the contract forbids; the message says what and what to do."""

    def __init__(self, plugin: str, problem: str) -> None:
        self.plugin = plugin
        self.problem = problem
        Exception.__init__(self, f"invalid result: {problem}")


# ------------------------------------------------------------------------------------ result checks
def check_status(value: object, what: str) -> Status:
    if not isinstance(value, Status):
        raise InvalidResult("", f"{what} returned {_describe(value)}, expected a Status (api.SUCCESS, ...)")
    return value


def check_pre_filter(value: object) -> tuple[PreFilterResult | None, Status]:
    if not (isinstance(value, tuple) and len(value) == 2):
        raise InvalidResult(
            "", f"pre_filter returned {_describe(value)}, expected a tuple (PreFilterResult | None, Status)"
        )
    pfr, status = value
    if pfr is not None and not isinstance(pfr, PreFilterResult):
        raise InvalidResult(
            "", f"pre_filter returned {_describe(pfr)} as its result, expected a PreFilterResult"
        )
    return pfr, check_status(status, "pre_filter")


def check_filter_result(fr: object, n: int, valid: np.ndarray) -> FilterResult:
    """A FilterResult the runtime can trust: ``failed`` uint64[n], a reason and a rejection code for
    every bit in use on a row that holds a node, no ``passed`` shortcut."""
    if not isinstance(fr, FilterResult):
        raise InvalidResult("", f"filter returned {_describe(fr)}, expected a FilterResult")
    failed = fr.failed
    if failed is None:
        return FilterResult.all_pass()
    if not isinstance(failed, np.ndarray) or failed.ndim != 1:
        raise InvalidResult("", f"FilterResult.failed is {_describe(failed)}, expected a 1-d numpy array")
    if failed.shape[0] != n:
        raise InvalidResult(
            "",
            f"FilterResult.failed has {failed.shape[0]} rows, expected {n} "
            "(one per node-table row: cluster.n_rows)",
        )
    kind = failed.dtype.kind
    if kind == "b":
        bits = failed.astype(np.uint64)
    elif kind in "iu":
        if kind == "i" and n and int(failed.min()) < 0:
            raise InvalidResult("", "FilterResult.failed has negative entries; it is a bitset of reasons")
        bits = failed.astype(np.uint64)
    else:
        raise InvalidResult(
            "", f"FilterResult.failed has dtype {failed.dtype}, expected bool or unsigned integers (uint64)"
        )
    reasons = tuple(fr.reasons)
    if not all(isinstance(r, str) for r in reasons):
        raise InvalidResult("", f"FilterResult.reasons must be strings, got {reasons!r}")
    # Rows without a node may hold anything (the runtime never reads them): judge the others.
    used = int(np.bitwise_or.reduce(bits, where=valid, initial=0)) if n else 0
    if used and used.bit_length() > len(reasons):
        raise InvalidResult(
            "",
            f"FilterResult.failed uses bit {used.bit_length() - 1} but only {len(reasons)} reason(s) "
            "are given: reasons[i] explains bit i",
        )
    codes = tuple(fr.codes) or (Code.UNSCHEDULABLE,) * len(reasons)
    if len(codes) != len(reasons):
        raise InvalidResult(
            "", f"FilterResult has {len(reasons)} reasons but {len(codes)} codes; give one code per reason"
        )
    for c in codes:
        if c not in _REJECTIONS:
            raise InvalidResult(
                "",
                f"FilterResult code {c!r} is not a rejection (Unschedulable or UnschedulableAndUnresolvable)",
            )
    if not used:
        return FilterResult.all_pass()
    return FilterResult(bits, reasons, tuple(Code(c) for c in codes))


def check_scores(scores: object, n: int, feasible: np.ndarray, what: str) -> Scores:
    """int, or int64[n] with finite values on the feasible rows (floats rounded, the rest zeroed)."""
    if isinstance(scores, bool | np.bool_):
        raise InvalidResult("", f"{what} returned a bool, expected an int or a numpy array of n_rows numbers")
    if isinstance(scores, int | np.integer):
        return int(scores)
    if isinstance(scores, float | np.floating):
        if not np.isfinite(scores):
            raise InvalidResult("", f"{what} returned {scores}, expected a finite number")
        return round(float(scores))
    if not isinstance(scores, np.ndarray):
        raise InvalidResult("", f"{what} returned {_describe(scores)}, expected an int or a numpy array")
    if scores.ndim != 1 or scores.shape[0] != n:
        raise InvalidResult(
            "",
            f"{what} returned an array of shape {scores.shape}, expected ({n},) "
            "(one score per node-table row: cluster.n_rows)",
        )
    kind = scores.dtype.kind
    if kind in "iu":
        return scores if scores.dtype == np.int64 else scores.astype(np.int64)
    if kind != "f":
        raise InvalidResult(
            "", f"{what} returned an array of dtype {scores.dtype}, expected integers (int64) or floats"
        )
    bad = ~np.isfinite(scores)
    hit = bad & feasible
    if hit.any():
        row = int(np.flatnonzero(hit)[0])
        raise InvalidResult(
            "",
            f"{what} returned {scores[row]} for row {row} (a candidate node); scores must be finite numbers",
        )
    clean = np.where(bad, 0.0, np.clip(scores, -_SCORE_LIMIT, _SCORE_LIMIT))
    return np.rint(clean).astype(np.int64)


def check_permit(value: object) -> tuple[Status, float]:
    if isinstance(value, Status):
        status, timeout = value, 0.0
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int | float):
        status, timeout = check_status(value[0], "permit"), float(value[1])
    else:
        raise InvalidResult("", f"permit returned {_describe(value)}, expected a tuple (Status, timeout_s)")
    if status.code == Code.WAIT and not timeout > 0:
        raise InvalidResult(
            "", f"permit asked to wait with timeout {timeout!r}; give a positive number of seconds"
        )
    return status, min(timeout, MAX_PERMIT_TIMEOUT_S)


def check_pre_bind(value: object) -> Any:
    """A Status, or a PendingPreBind (whose polled outcomes the binding runner checks)."""
    if isinstance(value, Status) or is_pending_pre_bind(value):
        return value
    raise InvalidResult(
        "",
        f"pre_bind returned {_describe(value)}, expected a Status or a PendingPreBind"
        " (with set_waker, poll and next_poll_at)",
    )


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


# ------------------------------------------------------------------------------------ the wrapper
_WRAPPED = (
    ("pre_filter", "_pre_filter"),
    ("filter", "_filter"),
    ("post_filter", "_post_filter"),
    ("pre_score", "_pre_score"),
    ("score", "_score"),
    ("normalize_score", "_normalize_score"),
    ("reserve", "_reserve"),
    ("unreserve", "_unreserve"),
    ("permit", "_permit"),
    ("pre_bind", "_pre_bind"),
    ("pre_bind_pre_flight", "_pre_bind_pre_flight"),
    ("post_bind", "_post_bind"),
)
_FORWARDED = (
    "explain_row",
    "events_to_register",
    "queueing_hints",
    "skips_pods_without",
    "sort_key",
    "pre_enqueue",
    "row_local",
)
"""Hooks (:mod:`ksched.framework.hooks`) an out-of-tree plugin keeps behind the guard. Not
``filter_rows`` (its answers are not checked), ``relevance`` (it would see the cache, not the
read-only view) nor ``scores_in_range`` (the range check stays)."""


class GuardedPlugin:
    """An out-of-tree plugin behind result checks, timing and error counting.

    It has exactly the extension-point methods the wrapped plugin has (the runtime decides what to
    call by looking for them), plus the optional hooks in ``_FORWARDED``.
    """

    def __init__(self, inner: object, name: str, recorder: FrameworkRecorder | None = None) -> None:
        self.inner = inner
        self.name = name
        self._recorder = recorder
        self._view: tuple[ClusterCache, ClusterView] | None = None
        for method, wrapper in _WRAPPED:
            if callable(getattr(inner, method, None)):
                setattr(self, method, getattr(self, wrapper))
        for attr in _FORWARDED:
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    def __repr__(self) -> str:
        return f"GuardedPlugin({self.name}: {self.inner!r})"

    # -------------------------------------------------------------- plumbing
    def view(self, cluster: Any) -> Any:
        """The read-only view of ``cluster`` (made once per cache)."""
        if not isinstance(cluster, ClusterCache):
            return cluster  # already a view, or a test double
        cached = self._view
        if cached is None or cached[0] is not cluster:
            cached = self._view = (cluster, ClusterView(cluster))
        return cached[1]

    def _call(self, point: str, fn: Callable[..., Any], check: Callable[[Any], Any], *args: Any) -> Any:
        try:
            return check(fn(*args))
        except Exception as exc:
            if self._recorder is not None:
                self._recorder.plugin_failed(self.name, point)
            if isinstance(exc, InvalidResult):
                exc.plugin = self.name
            raise

    # -------------------------------------------------------------- scheduling cycle
    def _pre_filter(self, state: CycleState, pod: Pod, cluster: Any) -> tuple[PreFilterResult | None, Status]:
        fn = self.inner.pre_filter  # type: ignore[attr-defined]
        return self._call("PreFilter", fn, check_pre_filter, state, pod, self.view(cluster))  # type: ignore[no-any-return]

    def _filter(self, state: CycleState, pod: Pod, cluster: Any) -> FilterResult:
        view = self.view(cluster)
        n = view.n_rows
        valid = view.valid

        def check(fr: object) -> FilterResult:
            return check_filter_result(fr, n, valid)

        return self._call("Filter", self.inner.filter, check, state, pod, view)  # type: ignore[attr-defined,no-any-return]

    def _post_filter(self, state: CycleState, pod: Pod, cluster: Any, *rest: Any) -> Any:
        fn = self.inner.post_filter  # type: ignore[attr-defined]
        return self._call("PostFilter", fn, _as_is, state, pod, self.view(cluster), *rest)

    def _pre_score(self, state: CycleState, pod: Pod, cluster: Any, feasible: np.ndarray) -> Status:
        fn = self.inner.pre_score  # type: ignore[attr-defined]

        def check(s: object) -> Status:
            return check_status(s, "pre_score")

        return self._call("PreScore", fn, check, state, pod, self.view(cluster), feasible)  # type: ignore[no-any-return]

    def _score(self, state: CycleState, pod: Pod, cluster: Any, feasible: np.ndarray) -> Scores:
        n = feasible.shape[0]

        def check(s: object) -> Scores:
            return check_scores(s, n, feasible, "score")

        return self._call("Score", self.inner.score, check, state, pod, self.view(cluster), feasible)  # type: ignore[attr-defined,no-any-return]

    def _normalize_score(self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray) -> Scores:
        n = feasible.shape[0]

        def check(s: object) -> Scores:
            return check_scores(s, n, feasible, "normalize_score")

        fn = self.inner.normalize_score  # type: ignore[attr-defined]
        return self._call("ScoreExtensionNormalize", fn, check, state, pod, scores, feasible)  # type: ignore[no-any-return]

    # -------------------------------------------------------------- binding cycle
    def _reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        def check(s: object) -> Status:
            return check_status(s, "reserve")

        return self._call("Reserve", self.inner.reserve, check, state, pod, node_name)  # type: ignore[attr-defined,no-any-return]

    def _unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._call("Unreserve", self.inner.unreserve, _as_is, state, pod, node_name)  # type: ignore[attr-defined]

    def _permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        return self._call("Permit", self.inner.permit, check_permit, state, pod, node_name)  # type: ignore[attr-defined,no-any-return]

    def _pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Any:
        return self._call("PreBind", self.inner.pre_bind, check_pre_bind, state, pod, node_name)  # type: ignore[attr-defined]

    def _pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        def check(s: object) -> Status:
            return check_status(s, "pre_bind_pre_flight")

        fn = self.inner.pre_bind_pre_flight  # type: ignore[attr-defined]
        return self._call("PreBindPreFlight", fn, check, state, pod, node_name)  # type: ignore[no-any-return]

    def _post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._call("PostBind", self.inner.post_bind, _as_is, state, pod, node_name)  # type: ignore[attr-defined]


def _as_is(value: Any) -> Any:
    return value
