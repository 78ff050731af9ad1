"""NodePorts filter over every node at once, on the cache's sparse host-port index.

Few pods want host ports, so the plugin asks the :class:`~ksched.cache.sparse.PortIndex` which rows
clash with each wanted port (upstream ``HostPortInfo.CheckConflict``) and fails exactly those rows.
Ports the pod wants twice itself are not checked against each other, as upstream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ksched.cache.sparse import clashes
from ksched.framework import names
from ksched.framework.api import (
    SKIP,
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Status,
    cluster_event,
)
from ksched.framework.interface import HintFn
from ksched.framework.plugins.nodeports import hints
from ksched.framework.row_delta import RowDelta
from ksched.model.pod import Pod

NAME: Final = names.NODE_PORTS
ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"


class NodePorts:
    """PreFilter skips pods without host ports; Filter fails (Unschedulable) nodes where one is taken."""

    name = NAME
    skips_pods_without = "host_ports"
    """PreFilter skips pods without host ports; the runtime then need not call it (``PodGatedPlugin``)."""

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        # pod.host_ports holds only hostPort > 0 from regular and sidecar containers (upstream GetHostPorts).
        if not pod.host_ports:
            return None, SKIP
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        if not pod.host_ports or not cluster.ports:
            return FilterResult.all_pass()
        clashing: set[int] = set()
        for wanted in pod.host_ports:
            clashing |= cluster.ports.conflicting_rows(wanted)
        n = cluster.nodes.n_rows
        rows = [r for r in clashing if 0 <= r < n]
        if not rows:
            return FilterResult.all_pass()
        fails = np.zeros(n, dtype=np.bool_)
        fails[rows] = True
        return FilterResult.from_mask(fails, ERR_REASON, Code.UNSCHEDULABLE)

    def filter_rows(
        self, state: CycleState, pod: Pod, cluster: ClusterReader, added: RowDelta
    ) -> FilterResult:
        """:meth:`filter` on ``added.rows`` only, with ``added``'s pods' host ports counted there;
        ``failed`` is aligned with those rows (the nominated-pods pass; see
        ``ksched.framework.nominated_pass``)."""
        if not pod.host_ports or not (cluster.ports or added.ports):
            return FilterResult.all_pass()
        clashing: set[int] = set()
        for wanted in pod.host_ports:
            clashing |= cluster.ports.conflicting_rows(wanted)
            # The added pods' ports, as if counted in the index (which plugins only read).
            clashing.update(r for r, held in added.ports if any(clashes(wanted, u) for u in held))
        rows = added.rows
        fails = np.fromiter((int(r) in clashing for r in rows), dtype=np.bool_, count=int(rows.size))
        if not fails.any():
            return FilterResult.all_pass()
        return FilterResult.from_mask(fails, ERR_REASON, Code.UNSCHEDULABLE)

    def filter_rows_key(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> object:
        """What :meth:`filter_rows` reads of the pod: nothing when it wants no host port (``False``,
        the same object for every such pod), else its host ports (shared by retries of that pod)."""
        return pod.host_ports or False

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: a deleted pod may free a port, a new
        node has all of them free (no hint function: upstream retries on every Node/Add)."""
        return {
            cluster_event("Pod", "Delete"): hints.after_pod_deleted,
            cluster_event("Node", "Add"): None,
        }

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """The first wanted host port that is taken on the node."""
        for wanted in pod.host_ports:
            if row in cluster.ports.conflicting_rows(wanted):
                return f"host port {wanted.protocol}/{wanted.host_ip}:{wanted.port} is already in use"
        return None


def new(args: Any, handle: Handle) -> NodePorts:
    return NodePorts()


if TYPE_CHECKING:
    from ksched.framework.api import FilterPlugin, PreFilterPlugin

    _conforms: tuple[PreFilterPlugin, FilterPlugin] = (NodePorts(), NodePorts())
