"""PodTopologySpread: spread a workload's pods over topology domains (zones, nodes, ...).

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/``. See :mod:`.plugin` for the
extension points, :mod:`.constraints` for parsing and defaulting, :mod:`.counting` for the
vectorized counting.
"""

from ksched.framework.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PodTopologySpread,
    new,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PodTopologySpread",
    "new",
]
