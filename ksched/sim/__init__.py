"""ksched.sim: an embedded Kubernetes cluster for tests, benchmarks and demos.

An in-memory API server over real HTTP (aiohttp), so the scheduler under test uses its production
client path: a versioned store with list/watch (one resourceVersion counter, bookmarks, a bounded
history answering 410 Expired), label/field selectors, pagination, ``pods/binding`` (409 when already
bound), status patches, graceful deletes, Leases with optimistic concurrency, Events (one resource served
as core/v1 and events.k8s.io/v1, converted as upstream; events.k8s.io writes validated as upstream, series
included), PDBs with eviction, namespaces, the
discovery endpoints and OpenAPI v2/v3 documents (upstream's schemas) ``kubectl`` needs, server-side
field validation (``fieldValidation``), and the storage API (PVs, PVCs, StorageClasses, CSI objects,
defaulted, admitted and validated as kube-apiserver does). Around it: a kubelet stand-in (bound pods
become Running), stand-ins for the PV controller, a CSI provisioner and the ephemeral volume
controller (a child process, :mod:`ksched.sim.storage_controllers`), scheduler_perf-shaped
generators, fault injection (partitioning one client included), a binding audit log and a write
audit naming the client of every write. ``SimConfig(secure=True)`` serves it as a secured
kube-apiserver (HTTPS, client certificates, tokens, front-proxy headers, RBAC with the bootstrap
policy, TokenReview and SubjectAccessReview, the extension-apiserver-authentication ConfigMap).

Entry points: :class:`SimCluster` (``start()``/``stop()`` or ``start_async()``/``stop_async()``,
``write_kubeconfig()``, ``store``, ``audit``, ``writes``, ``faults``), :class:`SimConfig`,
:class:`FaultConfig`, :func:`make_nodes`, :func:`make_pods`. Admin endpoints are listed in
``ksched/sim/_admin.py``.
"""

from importlib import import_module
from typing import Any

# Names resolve on first use (PEP 562): importing ksched.sim.cli for the command-line parser must
# not pull in aiohttp and the server, which costs a third of a second on every ``ksched`` command.
_EXPORTS = {
    "SimCluster": "ksched.sim.cluster",
    "SimConfig": "ksched.sim.config",
    "AuditLog": "ksched.sim.faults",
    "BindingRecord": "ksched.sim.faults",
    "ErrorRule": "ksched.sim.faults",
    "FaultConfig": "ksched.sim.faults",
    "FaultInjector": "ksched.sim.faults",
    "LatencyRule": "ksched.sim.faults",
    "PartitionRule": "ksched.sim.faults",
    "Store": "ksched.sim.store",
    "StorageControllers": "ksched.sim._storage_process",
    "make_nodes": "ksched.sim.workloads",
    "make_pods": "ksched.sim.workloads",
    "node_template": "ksched.sim.workloads",
    "pod_template": "ksched.sim.workloads",
    "WriteAudit": "ksched.sim.writes",
    "WriteRecord": "ksched.sim.writes",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ksched.sim' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "AuditLog",
    "BindingRecord",
    "ErrorRule",
    "FaultConfig",
    "FaultInjector",
    "LatencyRule",
    "PartitionRule",
    "SimCluster",
    "SimConfig",
    "StorageControllers",
    "Store",
    "WriteAudit",
    "WriteRecord",
    "make_nodes",
    "make_pods",
    "node_template",
    "pod_template",
]
