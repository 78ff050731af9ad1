"""``ksched sim serve``: run the embedded cluster in the foreground until SIGINT/SIGTERM.

The lead wires :func:`add_serve_parser` and :func:`run_serve` into ``ksched/cli.py``; :func:`main`
is a standalone entry point for testing without it.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ksched.sim import _heap as heap
from ksched.sim._storage_process import StorageControllers

if TYPE_CHECKING:
    from ksched.sim.cluster import SimCluster
    from ksched.sim.config import SimConfig
    from ksched.sim.faults import FaultConfig


def add_serve_parser(sim_subparsers: Any) -> argparse.ArgumentParser:
    """Register ``serve`` on the ``sim`` command's sub-parsers; returns the new parser."""
    p: argparse.ArgumentParser = sim_subparsers.add_parser(
        "serve",
        help="run an in-memory Kubernetes API server with simulated nodes",
        description="Serve an embedded Kubernetes API on 127.0.0.1 until interrupted: plain HTTP, or with "
        "--secure HTTPS with authentication and RBAC.",
    )
    p.add_argument("--nodes", type=int, default=0, help="nodes to create at start (default 0)")
    p.add_argument("--node-template", type=Path, help="Node manifest (YAML/JSON) used for --nodes")
    p.add_argument("--zones", type=int, default=0, help="spread nodes over this many zones (default 0)")
    p.add_argument("--port", type=int, default=0, help="TCP port (default 0: a free one)")
    p.add_argument("--address", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --address without --secure (then the server has no authentication: "
        "anyone who can reach it can read and change everything)",
    )
    p.add_argument(
        "--kubeconfig-out",
        type=Path,
        help="write a kubeconfig for this server here (with --secure: a system:masters admin certificate)",
    )
    add_secure_flags(p)
    p.add_argument("--faults", help="fault configuration: JSON text or a path to a JSON file")
    p.add_argument("--seed", type=int, default=0, help="seed for uids, names and faults (default 0)")
    p.add_argument("--history-window", type=int, default=10_000, help="watch events kept per resource")
    p.add_argument(
        "--no-start-pods",
        dest="start_pods",
        action="store_false",
        help="leave bound pods Pending, as upstream's scheduler_perf (no kubelets) does; graceful deletes "
        "still complete",
    )
    add_storage_controller_flags(p)
    p.set_defaults(func=run_serve)
    return p


def add_secure_flags(p: argparse.ArgumentParser) -> None:
    """``--secure`` and the credentials it serves with (see ``ksched/sim/_access.py``)."""
    g = p.add_argument_group(
        "secure serving",
        "HTTPS only (TLS 1.2+) with kube-apiserver's authentication (client certificates from a generated "
        "cluster CA, front-proxy headers, static tokens, anonymous) and RBAC with the bootstrap policy",
    )
    g.add_argument("--secure", action="store_true", help="serve HTTPS with authentication and RBAC")
    g.add_argument("--cert-dir", type=Path, help="also write the generated CAs and serving pair here")
    g.add_argument(
        "--token-auth-file", type=Path, help='static tokens, one `token,user,uid,"group1,group2"` per line'
    )
    g.add_argument(
        "--user-kubeconfig",
        action="append",
        default=[],
        metavar="USER[:GROUP,...]=PATH",
        help="with --secure, write a kubeconfig with a client certificate for USER in GROUPs to PATH "
        "(repeatable), e.g. system:kube-scheduler=scheduler.conf",
    )


def parse_user_kubeconfig(spec: str) -> tuple[str, tuple[str, ...], Path]:
    """``USER[:GROUP,...]=PATH`` -> (user, groups, path). A user named ``system:NAME`` keeps its
    first colon (``system:kube-scheduler=scheduler.conf`` has no groups); groups follow the next
    one. User names with more colons (service accounts) are not expressible here: use
    :meth:`~ksched.sim.cluster.SimCluster.write_kubeconfig`."""
    who, sep, path = spec.rpartition("=")
    if not sep or not who or not path:
        raise ValueError(f"--user-kubeconfig {spec!r}: expected USER[:GROUP,...]=PATH")
    user, groups = who, ""
    if who.startswith("system:"):
        head, colon, rest = who[len("system:") :].partition(":")
        if colon:
            user, groups = "system:" + head, rest
    else:
        user, _, groups = who.partition(":")
    return user, tuple(g for g in groups.split(",") if g), Path(path)


def add_storage_controller_flags(p: argparse.ArgumentParser) -> None:
    """The switches of the storage controller stand-ins (``ksched sim`` and ``ksched sim serve``)."""
    g = p.add_argument_group(
        "storage controllers",
        "stand-ins for kube-controller-manager's PV and ephemeral volume controllers and a CSI external "
        "provisioner, run as a child process against the embedded cluster (all on by default)",
    )
    g.add_argument("--no-pv-controller", dest="pv_controller", action="store_false", help="no PV controller")
    g.add_argument("--no-provisioner", dest="provisioner", action="store_false", help="no CSI provisioner")
    g.add_argument(
        "--no-ephemeral-controller", dest="ephemeral_controller", action="store_false",
        help="no ephemeral volume controller",
    )  # fmt: skip
    g.add_argument(
        "--no-storage-controllers", dest="storage_controllers", action="store_false",
        help="none of the three (no child process)",
    )  # fmt: skip


def storage_controllers_from_args(args: argparse.Namespace) -> StorageControllers:
    """Which stand-ins the flags of :func:`add_storage_controller_flags` leave on."""
    on = getattr(args, "storage_controllers", True)
    return StorageControllers(
        pv_controller=on and getattr(args, "pv_controller", True),
        provisioner=on and getattr(args, "provisioner", True),
        ephemeral=on and getattr(args, "ephemeral_controller", True),
    )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (``localhost`` or a loopback IP)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another host name: it may resolve to anything


def _faults(text: str | None, seed: int) -> FaultConfig | None:
    from ksched.sim.faults import FaultConfig

    if not text:
        return None
    path = Path(text)
    raw = path.read_text() if not text.lstrip().startswith("{") and path.exists() else text
    data = json.loads(raw)
    data.setdefault("seed", seed)
    return FaultConfig.from_dict(data)


def config_from_args(args: argparse.Namespace) -> SimConfig:
    """The :class:`SimConfig` that ``serve``'s flags ask for."""
    from ksched.sim.config import SimConfig

    cert_dir = getattr(args, "cert_dir", None)
    tokens = getattr(args, "token_auth_file", None)
    return SimConfig(
        host=args.address,
        port=args.port,
        seed=args.seed,
        history_window=getattr(args, "history_window", 10_000),
        start_pods=getattr(args, "start_pods", True),
        secure=getattr(args, "secure", False),
        cert_dir=str(cert_dir) if cert_dir else None,
        token_auth_file=str(tokens) if tokens else None,
    )


def run_serve(args: argparse.Namespace) -> int:
    """Start the server, print its URL, block until SIGINT/SIGTERM; 0 on a clean stop, 2 on bad input."""
    # Imported here, not at module level: building the ``ksched`` parser must stay cheap.
    from ksched.errors import InputError
    from ksched.sim.cluster import SimCluster
    from ksched.sim.workloads import load_template

    secure = getattr(args, "secure", False)
    if not is_loopback(args.address) and not secure and not getattr(args, "allow_remote", False):
        print(
            f"ksched sim: refusing to serve on non-loopback address {args.address!r}: the embedded API "
            "server has no authentication without --secure; pass --allow-remote to do it anyway",
            file=sys.stderr,
        )
        return 2
    try:
        faults = _faults(args.faults, args.seed)
        template = load_template(args.node_template) if args.node_template else None
        users = [parse_user_kubeconfig(s) for s in getattr(args, "user_kubeconfig", [])]
        if users and not secure:
            raise ValueError("--user-kubeconfig needs --secure (a plain server has no authentication)")
        if getattr(args, "cert_dir", None) and not secure:
            raise ValueError("--cert-dir needs --secure")
        cluster = SimCluster(config_from_args(args), faults=faults)
    except (OSError, ValueError, InputError) as exc:
        print(f"ksched sim: {exc}", file=sys.stderr)
        return 2
    if args.nodes:
        cluster.add_nodes(args.nodes, template, getattr(args, "zones", 0))
    outputs = Outputs(args.kubeconfig_out, users)
    return asyncio.run(_serve(cluster, outputs, storage_controllers_from_args(args)))


@dataclass(frozen=True, slots=True)
class Outputs:
    """Kubeconfigs to write once serving: the admin one and (secure mode) one per named user."""

    admin: Path | None
    users: list[tuple[str, tuple[str, ...], Path]]

    def write(self, cluster: SimCluster) -> None:
        if self.admin is not None:
            cluster.write_kubeconfig(self.admin)
            print(f"ksched sim: kubeconfig written to {self.admin}", flush=True)
        for user, groups, path in self.users:
            cluster.write_kubeconfig(path, user=user, groups=groups)
            print(f"ksched sim: kubeconfig for {user} written to {path}", flush=True)


async def _serve(cluster: SimCluster, kubeconfig: Outputs, controllers: StorageControllers) -> int:
    with heap.serving():
        collector = asyncio.create_task(heap.collect_every(heap.FULL_GC_INTERVAL_S))
        try:
            return await _serve_until_stopped(cluster, kubeconfig, controllers)
        finally:
            collector.cancel()


async def _serve_until_stopped(
    cluster: SimCluster, kubeconfig: Outputs, controllers: StorageControllers
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    url = await cluster.start_async()
    print(f"ksched sim: serving on {url}", flush=True)
    kubeconfig.write(cluster)
    try:
        if controllers.any:
            from ksched.sim._storage_process import StorageControllersError

            try:
                proc = await cluster.start_storage_controllers_async(
                    pv_controller=controllers.pv_controller,
                    provisioner=controllers.provisioner,
                    ephemeral=controllers.ephemeral,
                )
            except StorageControllersError as exc:
                print(f"ksched sim: {exc}", file=sys.stderr, flush=True)
                return 1
            print(f"ksched sim: storage controllers running (pid {proc.pid})", flush=True)
        await stop.wait()
    finally:
        await cluster.stop_async()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone ``sim`` command with the ``serve`` subcommand (for use without ksched/cli.py)."""
    parser = argparse.ArgumentParser(prog="ksched sim")
    subs = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(subs)
    args = parser.parse_args(argv)
    return int(args.func(args))
