"""DynamicResources: upstream skips it for pods without ``spec.resourceClaims``.

ksched does not watch ResourceClaims or ResourceSlices yet, so a pod that has claims gets an
explicit error instead of a decision made without the data.
"""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import ClusterReader, Handle
from ksched.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    NominatedPods,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from ksched.framework.result import CycleResult
from ksched.model.pod import Pod

NAME: Final = names.DYNAMIC_RESOURCES


class DynamicResources:
    name = NAME
    skips_pods_without = "resource_claims"
    """PreFilter skips pods without claims; the runtime then need not call it (``PodGatedPlugin``)."""

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.resource_claims:
            return None, SKIP
        claims = " ".join(pod.resource_claims)
        return None, Status(
            Code.ERROR, (f"ksched does not evaluate ResourceClaims yet: pod uses [{claims}]",)
        )

    def pre_enqueue(self, pod: Pod) -> Status:
        """Upstream waits for a pod's claims to exist; without claims there is nothing to wait for."""
        return SUCCESS

    def post_filter(
        self,
        state: CycleState,
        pod: Pod,
        cluster: ClusterReader,
        result: CycleResult,
        nominated: NominatedPods | None,
    ) -> PostFilterResult:
        """Upstream deallocates a pod's claims here; ksched allocates none, so there is nothing to undo.

        Upstream's answer is then a nil result, which leaves the pod's nomination alone."""
        return PostFilterResult(status=Status(Code.UNSCHEDULABLE), keep_nomination=True)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        return FilterResult.all_pass()


def new(args: Any, handle: Handle) -> DynamicResources:
    return DynamicResources()
