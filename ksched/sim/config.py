"""Settings of the embedded cluster: one frozen, keyword-only dataclass with units in the names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SimConfig:
    """How a :class:`~ksched.sim.cluster.SimCluster` serves and simulates."""

    host: str = "127.0.0.1"
    """Address to bind; never 0.0.0.0 unless asked for."""
    port: int = 0
    """TCP port; 0 picks a free one."""
    history_window: int = 10_000
    """Events kept per resource for watch resumption; older resourceVersions get 410 Expired."""
    bookmark_interval_s: float = 1.0
    """How often a watch with allowWatchBookmarks=true gets a BOOKMARK when idle."""
    slow_watcher_timeout_s: float = 5.0
    """A watch stream whose single write blocks longer than this is closed."""
    kubelet: bool = True
    """Run the kubelet stand-in (bound pods become Running; graceful deletes complete)."""
    start_pods: bool = True
    """Whether the kubelet stand-in turns bound pods Running. Off, bound pods stay Pending, as in
    upstream's scheduler_perf (which has no kubelets), and graceful deletes still complete."""
    running_delay_s: float = 0.01
    """Delay between a pod being bound and the kubelet stand-in marking it Running."""
    grace_scale: float = 1.0
    """Multiplier on deletion grace periods applied by the kubelet stand-in; 0 removes at once."""
    seed: int = 0
    """Seeds uids, generated names and workload generators."""
    git_version: str = "v1.35.0-ksched"
    """What ``/version`` reports."""
    default_namespaces: tuple[str, ...] = ("default", "kube-system", "kube-public", "kube-node-lease")
    """Namespaces that exist from the start."""
    secure: bool = False
    """Serve HTTPS only (TLS 1.2+) with kube-apiserver's authentication (client certificates from a
    generated cluster CA, front-proxy request headers, static bearer tokens, anonymous) and RBAC
    over the stored roles, seeded with the bootstrap policy; see ``ksched/sim/_access.py``."""
    cert_dir: str | None = None
    """Secure mode: also write the generated CA, front-proxy CA and serving pairs here (kubeadm's
    file names); ``None`` keeps them in memory only."""
    token_auth_file: str | None = None
    """Static bearer tokens in kube-apiserver's ``--token-auth-file`` CSV format
    (``token,user,uid,"group1,group2"``), loaded at construction."""
