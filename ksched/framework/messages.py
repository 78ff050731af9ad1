"""Upstream's FailedScheduling text (``FitError.Error`` in ``framework/types.go``).

``0/<all nodes> nodes are available: <histogram>.`` where the histogram counts every reason of each
node's first failing plugin, entries are ``"<count> <reason>"`` sorted as plain strings (so
``"10 X"`` comes before ``"2 Y"``) and joined with ``", "``. A PreFilter rejection replaces the
histogram with its message. The PostFilter (preemption) part is appended by the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ksched.config.names import DEFAULT_PREEMPTION

if TYPE_CHECKING:
    from ksched.framework.result import CycleResult

PREEMPTION_PREFIX = "preemption: "
"""What upstream's DefaultPreemption puts before its message."""


def reason_histogram(result: CycleResult) -> dict[str, int]:
    """Reason -> number of nodes whose first failing plugin reported it."""
    counts: dict[str, int] = {}
    if not result.filters or result.valid is None:
        return counts
    n = result.valid.shape[0]
    remaining = result.valid.copy()
    if result.feasible is not None:
        remaining &= ~result.feasible[:n]
    for _plugin, fr in result.filters:
        if fr.failed is None:
            continue
        failed = fr.failed[:n]
        here = remaining & (failed != 0)
        if not here.any():
            continue
        for bit, reason in enumerate(fr.reasons):
            c = int(np.count_nonzero(here & ((failed >> np.uint64(bit)) & np.uint64(1)).astype(np.bool_)))
            if c:
                counts[reason] = counts.get(reason, 0) + c
        remaining &= ~here
    return counts


def fit_error_message(
    result: CycleResult, post_filter_msg: str = "", post_filter_plugin: str = DEFAULT_PREEMPTION
) -> str:
    """The full ``0/N nodes are available: ...`` message for a cycle that found no node.

    ``post_filter_msg`` is the PostFilter status message; DefaultPreemption's is prefixed with
    ``preemption: `` as upstream's plugin does (pass the status's plugin name when another
    PostFilter plugin decided, so that its message goes in as it is).
    """
    if post_filter_msg and post_filter_plugin == DEFAULT_PREEMPTION:
        post_filter_msg = PREEMPTION_PREFIX + post_filter_msg
    head = f"0/{result.num_all_nodes} nodes are available:"
    if result.prefilter_rejection is not None:
        body = f" {result.prefilter_rejection.message}."
    else:
        hist = reason_histogram(result)
        entries = sorted(f"{count} {reason}" for reason, count in hist.items())
        body = f" {', '.join(entries)}." if entries else ""  # nodes failed with no reason (an extender)
    tail = f" {post_filter_msg}" if post_filter_msg else ""
    return head + body + tail
