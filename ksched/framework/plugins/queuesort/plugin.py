"""PrioritySort as a heap key rather than a comparator.

Upstream's ``Less(a, b)`` is ``a.priority > b.priority || (equal && a.timestamp before b.timestamp)``.
The active queue is a heap, which wants a key; ``(-priority, enqueued_at)`` orders exactly like
``Less`` (the queue adds its own sequence number to break exact ties, where ``Less`` is false both
ways and upstream's heap order is unspecified).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ksched.framework import names
from ksched.framework.api import Handle

NAME: Final = names.PRIORITY_SORT


def less(a_priority: int, a_enqueued_at: float, b_priority: int, b_enqueued_at: float) -> bool:
    """Upstream ``PrioritySort.Less``: should pod ``a`` be popped before pod ``b``?"""
    return a_priority > b_priority or (a_priority == b_priority and a_enqueued_at < b_enqueued_at)


class PrioritySort:
    """Higher ``spec.priority`` first (a missing priority is 0); ties go to the earlier enqueue time."""

    name = NAME

    def sort_key(self, priority: int, enqueued_at: float) -> tuple[int, float]:
        """Smaller keys pop first; consistent with :func:`less`."""
        return (-priority, enqueued_at)

    def less(self, a_priority: int, a_enqueued_at: float, b_priority: int, b_enqueued_at: float) -> bool:
        return less(a_priority, a_enqueued_at, b_priority, b_enqueued_at)


def new(args: Any, handle: Handle) -> PrioritySort:
    return PrioritySort()


if TYPE_CHECKING:
    from ksched.framework.interface import QueueSortPlugin

    _conforms: QueueSortPlugin = PrioritySort()
