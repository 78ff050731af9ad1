"""ksched.sim: an embedded Kubernetes cluster for tests, benchmarks and demos.

An in-memory API server over real HTTP (aiohttp), so the scheduler under test uses its production
client path: a versioned store with list/watch (one resourceVersion counter, bookmarks, a bounded
history answering 410 Expired), label/field selectors, pagination, ``pods/binding`` (409 when already
bound), status patches, graceful deletes, Leases with optimistic concurrency, Events, PDBs with
eviction, namespaces and the discovery endpoints ``kubectl`` needs. Around it: a kubelet stand-in
(bound pods become Running), scheduler_perf-shaped generators, fault injection and a binding audit log.

Entry points: :class:`SimCluster` (``start()``/``stop()`` or ``start_async()``/``stop_async()``,
``write_kubeconfig()``, ``store``, ``audit``, ``faults``), :class:`SimConfig`, :class:`FaultConfig`,
:func:`make_nodes`, :func:`make_pods`. Admin endpoints are listed in ``ksched/sim/_admin.py``.
"""

from ksched.sim.cluster import SimCluster
from ksched.sim.config import SimConfig
from ksched.sim.faults import AuditLog, BindingRecord, ErrorRule, FaultConfig, FaultInjector, LatencyRule
from ksched.sim.store import Store
from ksched.sim.workloads import make_nodes, make_pods, node_template, pod_template

__all__ = [
    "AuditLog",
    "BindingRecord",
    "ErrorRule",
    "FaultConfig",
    "FaultInjector",
    "LatencyRule",
    "SimCluster",
    "SimConfig",
    "Store",
    "make_nodes",
    "make_pods",
    "node_template",
    "pod_template",
]
