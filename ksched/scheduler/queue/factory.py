"""Building the scheduling queue a configuration describes: one QueueSort for all profiles,
PreEnqueue plugins per profile, backoff from the configuration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ksched.config import names as ext
from ksched.config.types import SchedulerConfiguration
from ksched.framework.runtime import Framework
from ksched.metrics import Metrics
from ksched.scheduler.events_registry import registry_for_profiles
from ksched.scheduler.queue.scheduling_queue import SchedulingQueue
from ksched.scheduler.queue.types import QueueSettings


def queue_for(
    config: SchedulerConfiguration,
    profiles: Mapping[str, Framework],
    *,
    clock: Callable[[], float],
    metrics: Metrics | None = None,
) -> SchedulingQueue:
    """The queue for ``config``'s profiles (validation already ensured one QueueSort plugin)."""
    sort_plugin = None
    pre_enqueue: dict[str, list[Any]] = {}
    for profile in config.profiles:
        fw = profiles[profile.scheduler_name]
        for ref in profile.plugins.get(ext.QUEUE_SORT, ()):
            sort_plugin = sort_plugin or fw.plugins.get(ref.name)
        pre_enqueue[profile.scheduler_name] = [
            fw.plugins[ref.name]
            for ref in profile.plugins.get(ext.PRE_ENQUEUE, ())
            if hasattr(fw.plugins.get(ref.name), "pre_enqueue")
        ]
    settings = QueueSettings(
        pod_initial_backoff_s=config.pod_initial_backoff_s,
        pod_max_backoff_s=config.pod_max_backoff_s,
        pod_max_in_unschedulable_pods_s=config.pod_max_in_unschedulable_pods_s,
    )
    return SchedulingQueue(
        clock=clock,
        settings=settings,
        queue_sort=sort_plugin,
        pre_enqueue=pre_enqueue,
        events=registry_for_profiles(profiles.values()),
        metrics=metrics,
    )
