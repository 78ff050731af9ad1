"""PrioritySort: the queue order, higher priority first, then first come first served.

Upstream: ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``.
"""

from ksched.framework.plugins.queuesort.plugin import NAME, PrioritySort, less, new

__all__ = ["NAME", "PrioritySort", "less", "new"]
