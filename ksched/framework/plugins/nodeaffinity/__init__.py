"""NodeAffinity: ``spec.nodeSelector``, required/preferred node affinity and the scheduler-enforced
``addedAffinity``.

Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` with matching from
``staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``.
"""

from ksched.framework.plugins.nodeaffinity.plugin import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    new,
)

__all__ = ["ERR_REASON_CONFLICT", "ERR_REASON_ENFORCED", "ERR_REASON_POD", "NAME", "NodeAffinity", "new"]
