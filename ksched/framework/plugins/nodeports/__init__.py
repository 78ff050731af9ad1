"""NodePorts: a pod's host ports must be free on the node.

Upstream: ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``.
"""

from ksched.framework.plugins.nodeports.plugin import ERR_REASON, NAME, NodePorts, new

__all__ = ["ERR_REASON", "NAME", "NodePorts", "new"]
