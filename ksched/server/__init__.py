"""The scheduler's own HTTP endpoints: ``/metrics``, ``/healthz``, ``/livez``, ``/readyz`` and
``/debug/profile``.

Served by aiohttp on the I/O thread's event loop, next to the API client, so it costs the
scheduling thread nothing. It binds to 127.0.0.1 unless told otherwise (kube-scheduler's secure
port is 10259). It serves plain HTTP unless given a certificate and key (``--tls-cert-file``,
``--tls-private-key-file``, as kube-scheduler names them): then only HTTPS, TLS 1.2 or newer.
There is no authentication, so off loopback it is meant to sit behind the pod network's policy.

``/debug/profile?seconds=N`` asks the *scheduling thread* to run under cProfile for N seconds
and returns the statistics in the binary format ``pstats.Stats`` loads; the handoff goes through
the scheduler's inbox because cProfile only sees the thread that enables it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10259
MAX_PROFILE_SECONDS = 300


@dataclass(slots=True)
class Health:
    """What /readyz reports; written by the scheduling thread, read by the server (plain flags)."""

    synced: bool = False
    leader_election: bool = False
    leading: bool = False
    stopping: bool = False
    details: dict[str, str] = field(default_factory=dict)


ProfileRequester = Callable[[float], concurrent.futures.Future[bytes]]


def build_app(
    registry: CollectorRegistry, health: Health, *, request_profile: ProfileRequester | None = None
) -> web.Application:
    """The aiohttp application; ``request_profile`` is None when profiling is disabled."""

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        checks = {
            "informer-sync": "ok" if health.synced else "waiting for caches to sync",
            "shutdown": "ok" if not health.stopping else "shutting down",
        }
        if health.leader_election:
            checks["leader"] = "leading" if health.leading else "standby"
        ready = health.synced and not health.stopping
        lines = [f"[{'+' if v in ('ok', 'leading', 'standby') else '-'}]{k} {v}" for k, v in checks.items()]
        lines.append("readyz check passed" if ready else "readyz check failed")
        return web.Response(text="\n".join(lines) + "\n", status=200 if ready else 503)

    async def profile(request: web.Request) -> web.Response:
        if request_profile is None:
            return web.Response(status=404, text="profiling is disabled (enableProfiling: false)\n")
        try:
            seconds = float(request.query.get("seconds", "30"))
        except ValueError:
            return web.Response(status=400, text="seconds must be a number\n")
        if not 0 < seconds <= MAX_PROFILE_SECONDS:
            return web.Response(status=400, text=f"seconds must be in (0, {MAX_PROFILE_SECONDS}]\n")
        data = await asyncio.wrap_future(request_profile(seconds))
        return web.Response(
            body=data,
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Disposition": 'attachment; filename="ksched.pstats"',
            },
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/debug/profile", profile)
    return app


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2+) from PEM files; raises OSError/ssl.SSLError when unusable."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


async def start_server(
    app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner (for cleanup) and the bound port (useful with port 0)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    await site.start()
    bound = port
    for address in runner.addresses:  # (host, port, ...) of each bound socket
        if isinstance(address, tuple) and len(address) >= 2:
            bound = int(address[1])
            break
    return runner, bound
