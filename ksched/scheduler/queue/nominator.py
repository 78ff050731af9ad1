"""Nominated pods: which pending pod preemption (or ``status.nominatedNodeName``) reserved a node for.

Upstream: ``pkg/scheduler/backend/queue/nominator.go``. The framework adds the nominated pods of a
node whose priority is at least the incoming pod's before running Filter (reference §3.6).

Single-threaded: called only from the scheduling thread.
"""

from __future__ import annotations

import bisect
import itertools

from ksched.model.pod import Pod


class Nominator:
    """``uid -> node name`` plus ``node name -> pods``, each node's list ordered by priority (highest first).

    Pods of equal priority keep the order they were nominated in.
    """

    __slots__ = ("_at_least", "_by_node", "_node_of", "_seq")

    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}
        self._by_node: dict[str, list[tuple[int, int, Pod]]] = {}
        self._seq = itertools.count()
        # groups_at_least's answers per priority, dropped on every change.
        self._at_least: dict[int, tuple[tuple[str, tuple[Pod, ...]], ...]] = {}

    def __len__(self) -> int:
        return len(self._node_of)

    def __contains__(self, uid: object) -> bool:
        return uid in self._node_of

    def add(self, pod: Pod, node_name: str | None = None) -> None:
        """Nominate ``pod`` to ``node_name`` (Override mode), or to ``pod.nominated_node_name`` when None.

        An empty node name clears the nomination; an already bound pod is never nominated.
        """
        self.delete(pod.uid)
        node = pod.nominated_node_name if node_name is None else node_name
        if not node or pod.node_name:
            return
        self._node_of[pod.uid] = node
        self._at_least.clear()
        entries = self._by_node.setdefault(node, [])
        bisect.insort(entries, (-pod.priority, next(self._seq), pod), key=lambda e: (e[0], e[1]))

    def update(self, old: Pod | None, new: Pod) -> None:
        """Upstream ``UpdateNominatedPod``: keep a nomination made in memory when the update lacks one.

        An update without ``nominatedNodeName`` can arrive right after PostFilter nominated the pod
        but before the status patch lands; dropping the nomination then would free the node.
        """
        node: str | None = None
        if (old is None or not old.nominated_node_name) and not new.nominated_node_name:
            node = self._node_of.get(new.uid)
            if node is None:
                self.delete(new.uid)
                return
        self.add(new, node)

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        self._at_least.clear()
        entries = self._by_node[node]
        entries[:] = [e for e in entries if e[2].uid != uid]
        if not entries:
            del self._by_node[node]

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def node_names(self) -> list[str]:
        """Nodes that have nominated pods: the framework visits only these (optional in the Protocol)."""
        return list(self._by_node)

    def groups_at_least(self, priority: int) -> tuple[tuple[str, tuple[Pod, ...]], ...]:
        """``(node name, pods)`` for every node with nominated pods of at least ``priority``,
        those pods highest first: what the framework's nominated-pods pass reads on every cycle
        while any nomination exists (optional in the Protocol). Remembered per priority until the
        nominations change, since thousands of cycles see the same few."""
        found = self._at_least.get(priority)
        if found is None:
            groups = []
            for node, entries in self._by_node.items():
                pods = tuple(e[2] for e in entries if -e[0] >= priority)
                if pods:
                    groups.append((node, pods))
            found = self._at_least[priority] = tuple(groups)
        return found

    def pods_for_node(self, node_name: str) -> list[Pod]:
        """Pods nominated to ``node_name``, highest priority first."""
        return [e[2] for e in self._by_node.get(node_name, ())]
