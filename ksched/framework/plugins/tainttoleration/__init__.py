"""TaintToleration: keeps pods off nodes whose hard taints they do not tolerate, and prefers nodes
with fewer untolerated ``PreferNoSchedule`` taints.

Upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``.
"""

from ksched.framework.plugins.tainttoleration.plugin import ERR_REASON_NOT_MATCH, NAME, TaintToleration, new

__all__ = ["ERR_REASON_NOT_MATCH", "NAME", "TaintToleration", "new"]
