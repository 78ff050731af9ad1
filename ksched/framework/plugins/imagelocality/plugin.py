"""ImageLocality score over every node at once, from the cache's sparse image index.

For each container image (init and regular, duplicates counted again, as upstream) the nodes that
hold it get ``int64(float64(size) * float64(numNodesWithImage) / float64(totalNodes))`` added: the
"spread" factor damps images that are everywhere. The sum is clamped to
``[23Mi, 1000Mi * containers]`` and mapped linearly to 0..100 with integer division.

``size`` is one number per image name for the whole cluster, as in upstream's cache, where the
first node to report a name fixes its size; here it is the size of the earliest-registered node
still holding the name. The two agree unless nodes report different sizes for one name and the
first reporter is later updated or removed. No NormalizeScore: the output is already 0..100.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ksched.framework import names
from ksched.framework.api import MAX_NODE_SCORE, ClusterEventSpec, ClusterReader, CycleState, Handle, Scores
from ksched.framework.interface import HintFn
from ksched.model.pod import Pod

NAME: Final = names.IMAGE_LOCALITY
MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: append ``:latest`` when the reference has no tag.

    A tag is a ``:`` after the last ``/`` (so a registry port does not count); digests are left alone.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sums: np.ndarray, num_containers: int) -> np.ndarray:
    """Upstream ``calculatePriority``, vectorized: clamp, then scale to 0..100 (truncating)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(sums > max_threshold, max_threshold, sums)
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, clamped)  # checked first, as upstream
    num = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)
    den = max_threshold - MIN_THRESHOLD  # never 0: 23Mi is not a multiple of 1000Mi
    q = np.abs(num) // abs(den)
    return np.where((num < 0) != (den < 0), -q, q).astype(np.int64)


class ImageLocality:
    """Score only; nodes holding none of the pod's images score 0."""

    name = NAME
    scores_in_range = True

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        total = len(cluster.nodes)
        n = cluster.nodes.n_rows
        sums: np.ndarray | None = None
        for image in pod.images:
            holders = cluster.images.rows_with(normalized_image_name(image))
            if not holders or total == 0:
                continue
            size = next(iter(holders.values()))
            scaled = int(float(size) * (len(holders) / total))
            if sums is None:
                sums = np.zeros(n, dtype=np.int64)
            rows = np.fromiter(holders.keys(), dtype=np.int64, count=len(holders))
            sums[rows[rows < n]] += scaled
        if sums is None:
            # Every node sums to 0, which clamps to the minimum threshold: score 0 everywhere.
            return 0
        return calculate_priority(sums, pod.container_count)

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """None: upstream's plugin has no EventsToRegister, and a Score plugin rejects no pod, so
        no event needs to move one back."""
        return {}


def new(args: Any, handle: Handle) -> ImageLocality:
    return ImageLocality()


if TYPE_CHECKING:
    from ksched.framework.api import ScorePlugin

    _conforms: ScorePlugin = ImageLocality()
