"""NodeName: a pod that names its node (``spec.nodeName``) fits only there.

Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go``.
"""

from ksched.framework.plugins.nodename.plugin import ERR_REASON, NodeName, new

__all__ = ["ERR_REASON", "NodeName", "new"]
