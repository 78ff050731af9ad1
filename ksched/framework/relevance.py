"""Which pods a non-row-local Filter plugin cares about, so that moving the others may be batched.

Both the nominated-pods pass (:mod:`ksched.framework.nominated_pass`) and preemption's batched dry
run (``Framework.batch_guard``) count pods on nodes, or take them off, in the row accounting only
and let many nodes share one filter pass. That is exact only for pods no non-row-local filter
(inter-pod affinity, topology spread) would see; :func:`relevance` says which those are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ksched.cache.reader import ClusterReader
from ksched.model.pod import Pod


def never(other: Pod) -> bool:
    """No pod is relevant (returned as itself, so that callers can skip asking pod by pod)."""
    return False


def always(other: Pod) -> bool:
    """Every pod is relevant (returned as itself, like :func:`never`)."""
    return True


def relevance(plugins: Sequence[object], pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool]:
    """Whether counting a pod on a node (or taking it off) could change the Filter verdict of one
    of ``plugins`` (the non-row-local ones that run for ``pod``) on any node other than through
    that node's own row accounting (requests, pod count, ports).

    Each plugin answers through ``relevance(pod, cluster)``, which returns such a predicate (None:
    no pod is) and must say True when unsure; a plugin without it makes every pod relevant. Pods
    that are not relevant can be moved in the row accounting only (``RowDelta.apply``,
    preemption's ``ArrayProbe``) and many nodes share one filter pass; the others need the cache
    itself changed (``assume`` / ``remove_pod``), one node at a time, as upstream clones one
    NodeInfo at a time. Returns :func:`never` / :func:`always` themselves when that is the
    answer.
    """
    checks: list[Callable[[Pod], bool]] = []
    for plugin in plugins:
        factory = getattr(plugin, "relevance", None)
        if factory is None:
            return always
        check = factory(pod, cluster)
        if check is not None:
            checks.append(check)
    if not checks:
        return never
    if len(checks) == 1:
        return checks[0]
    return lambda other: any(check(other) for check in checks)


__all__ = ["always", "never", "relevance"]
