"""InterPodAffinity: required and preferred inter-pod affinity and anti-affinity, over every node at once.

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/`` (``plugin.go``, ``filtering.go``,
``scoring.go``).
"""

from ksched.framework.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    InterPodAffinity,
    new,
)

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "InterPodAffinity",
    "new",
]
