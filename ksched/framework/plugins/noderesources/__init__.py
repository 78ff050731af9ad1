"""NodeResourcesFit and NodeResourcesBalancedAllocation, sharing one sweep over the node table.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/``. The numpy references are in
:mod:`.scoring`; the compiled twins in ``ksched/_fast/kernels.pyx``; the shared sweep in
:mod:`.resource_pass`.
"""

from ksched.framework.plugins.noderesources.balanced_allocation import (
    BalancedAllocation,
    new_balanced_allocation,
)
from ksched.framework.plugins.noderesources.fit import (
    ERR_REASON_INSUFFICIENT_CPU,
    ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    ERR_REASON_INSUFFICIENT_MEMORY,
    ERR_REASON_TOO_MANY_PODS,
    Fit,
    new_fit,
)
from ksched.framework.plugins.noderesources.resource_pass import insufficient

__all__ = [
    "ERR_REASON_INSUFFICIENT_CPU",
    "ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE",
    "ERR_REASON_INSUFFICIENT_MEMORY",
    "ERR_REASON_TOO_MANY_PODS",
    "BalancedAllocation",
    "Fit",
    "insufficient",
    "new_balanced_allocation",
    "new_fit",
]
