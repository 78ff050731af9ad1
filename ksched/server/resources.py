"""``/metrics/resources``: upstream's resource metrics (pkg/scheduler/metrics/resources), the
requests of every pod the scheduler knows, by pod, node, scheduler, priority and resource.

The pods come from the pod informer's events, seen on the I/O thread as they pass to the scheduler's
inbox (:meth:`PodResources.observe`), so the scheduling thread is not asked and nothing is shared
across threads: the endpoint is served on the same loop. As upstream, finished pods (Succeeded or
Failed, on a node) are left out, and only the leader answers (a standby answers an empty page).

Not served: ``kube_pod_resource_limit``. The pod records ksched decodes keep requests (limits
only where they stand in for a missing request), not limits, and decoding limits for every pod
would cost every watch event for an endpoint few scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ksched.kube.events import Deleted, InformerEvent, Invalid, Relisted, Upserted

REQUEST_HELP = (
    "Resources requested by workloads on the cluster, broken down by pod. This shows the resource usage "
    "the scheduler and kubelet expect per pod for resources along with the unit for the resource if any."
)
LABELS = ("namespace", "pod", "node", "scheduler", "priority", "resource", "unit")
BYTES = frozenset({"memory", "storage", "ephemeral-storage"})
TERMINAL = frozenset({"Succeeded", "Failed"})


def unit(resource: str) -> str:
    """Upstream's unit label: cores, bytes (memory, storage, hugepages), integer (attachable
    volumes), else empty."""
    if resource == "cpu":
        return "cores"
    if resource in BYTES or resource.startswith("hugepages-"):
        return "bytes"
    if resource.startswith("attachable-volumes-"):
        return "integer"
    return ""


def value(resource: str, amount: int) -> float:
    """ksched keeps cpu in millicores; upstream reports cores."""
    return amount / 1000 if resource == "cpu" else float(amount)


class PodResources(Collector):
    """The pods' requests as the informer last reported them; I/O thread only."""

    def __init__(self, is_leader: Callable[[], bool]) -> None:
        self._pods: dict[str, Any] = {}
        self._is_leader = is_leader

    def observe(self, event: InformerEvent) -> None:
        if isinstance(event, Upserted):
            self._pods[event.obj.uid] = event.obj
        elif isinstance(event, Deleted):
            self._pods.pop(event.obj.uid, None)
        elif isinstance(event, Invalid) and event.event_type == "DELETED":
            self._pods.pop(event.uid, None)
        elif isinstance(event, Relisted):
            self._pods = {p.uid: p for p in event.objs}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("kube_pod_resource_request", REQUEST_HELP, labels=LABELS)
        if self._is_leader():
            for pod in self._pods.values():
                if pod.node_name and pod.phase in TERMINAL:
                    continue
                for resource, amount in sorted(pod.requests.items()):
                    labels = [
                        pod.namespace,
                        pod.name,
                        pod.node_name,
                        pod.scheduler_name,
                        str(pod.priority),
                        resource,
                        unit(resource),
                    ]
                    family.add_metric(labels, value(resource, amount))
        yield family

    def exposition(self) -> bytes:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return generate_latest(registry)

    def tee(self, sink: Callable[[InformerEvent], None]) -> Callable[[InformerEvent], None]:
        """A sink that records each event here, then hands it on to ``sink``."""

        def both(event: InformerEvent) -> None:
            self.observe(event)
            sink(event)

        return both
