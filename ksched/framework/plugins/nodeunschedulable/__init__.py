"""NodeUnschedulable: keeps pods off cordoned nodes unless they tolerate the unschedulable taint.

Upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``.
"""

from ksched.framework.plugins.nodeunschedulable.plugin import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable, new

__all__ = ["ERR_REASON_UNSCHEDULABLE", "NodeUnschedulable", "new"]
