"""``python -m ksched.sim.storage_controllers --server URL``: the storage controller stand-ins.

Against a secure cluster (an ``https://`` URL) the CA certificate and a bearer token come in the
environment (``KSCHED_SIM_CA_PEM``, ``KSCHED_SIM_TOKEN``), never on the command line.

Started by :class:`~ksched.sim.cluster.SimCluster` (and so by ``ksched sim`` and ``ksched sim
serve``) with ``--stop-on-stdin-eof``: the parent holds the other end of the child's stdin, so the
child stops when the parent does, even when the parent is killed. SIGTERM and SIGINT stop it too.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from ksched.sim._storage_process import CA_ENV, TOKEN_ENV
from ksched.sim.storage_controllers import Settings, run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ksched.sim.storage_controllers", description=__doc__)
    p.add_argument("--server", required=True, help="API server URL, e.g. http://127.0.0.1:8080")
    p.add_argument("--no-pv-controller", dest="pv_controller", action="store_false", help="no PV controller")
    p.add_argument("--no-provisioner", dest="provisioner", action="store_false", help="no CSI provisioner")
    p.add_argument(
        "--no-ephemeral", dest="ephemeral", action="store_false", help="no ephemeral volume controller"
    )
    p.add_argument(
        "--resync-period", type=float, default=15.0, help="seconds between full resyncs (default 15)"
    )
    p.add_argument("--stop-on-stdin-eof", action="store_true", help="stop when standard input closes")
    p.add_argument("--log-level", default="WARNING", help="WARNING (default), INFO or DEBUG")
    return p.parse_args(argv)


async def _main(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.stop_on_stdin_eof:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def watch_stdin() -> None:
            while await reader.read(4096):
                pass
            stop.set()

        stdin_task = asyncio.create_task(watch_stdin())
    settings = Settings(
        server=args.server,
        pv_controller=args.pv_controller,
        provisioner=args.provisioner,
        ephemeral=args.ephemeral,
        resync_s=args.resync_period,
        ca_pem=os.environ.get(CA_ENV, ""),
        token=os.environ.get(TOKEN_ENV, ""),
    )

    def ready() -> None:
        sys.stdout.write("ready\n")
        sys.stdout.flush()

    try:
        await run(settings, stop, ready)
    finally:
        if args.stop_on_stdin_eof:
            stdin_task.cancel()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s storage-controllers %(name)s: %(message)s"
    )
    asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
