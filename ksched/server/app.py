"""The endpoints kube-scheduler serves (cmd/kube-scheduler/app/server.go newEndpointsHandler):
/metrics, /metrics/resources (:mod:`ksched.server.resources`), /configz (:mod:`ksched.server.configz`),
the health checks (:mod:`ksched.server.health`) and, with profiling on, /debug/pprof/,
/debug/flags/v and ksched's /debug/profile.

``/debug/profile?seconds=N`` (and upstream's name for it, ``/debug/pprof/profile``) asks the
*scheduling thread* to run under cProfile for N seconds and returns statistics in the binary format
``pstats.Stats`` loads: the handoff goes through the scheduler's inbox because cProfile only sees
the thread that enables it. Go's other pprof profiles (heap, goroutine, ...) have no Python
counterpart and answer 404 naming the profile. With profiling off every /debug path is 404.

``PUT /debug/flags/v`` with a klog level sets the log verbosity, as upstream's
StringFlagPutHandler: 200 ``successfully set klog.logging.verbosity to N``, 400 on a bad level,
406 for another method.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ksched.server import health as health_checks
from ksched.server.health import Health
from ksched.server.resources import PodResources

MAX_PROFILE_SECONDS = 300
ProfileRequester = Callable[[float], concurrent.futures.Future[bytes]]


def set_klog_verbosity(level: int) -> None:
    """klog's V(0) is always logged (INFO); any higher verbosity turns DEBUG on."""
    logging.getLogger().setLevel(logging.DEBUG if level > 0 else logging.INFO)


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoints:
    """What the handlers read."""

    registry: CollectorRegistry
    health: Health
    componentconfig: Callable[[], Mapping[str, Any]] | None = None
    """The effective KubeSchedulerConfiguration as upstream's JSON (for /configz)."""
    request_profile: ProfileRequester | None = None
    """None: profiling is off (enableProfiling: false)."""
    set_verbosity: Callable[[int], None] = set_klog_verbosity
    resources: PodResources | None = None
    """The pods' requests for /metrics/resources (None: not served)."""


def _text(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, headers={"X-Content-Type-Options": "nosniff"})


async def _profile(ep: Endpoints, request: web.Request) -> web.Response:
    if ep.request_profile is None:
        return _text("profiling is disabled (enableProfiling: false)\n", 404)
    try:
        seconds = float(request.query.get("seconds", "30"))
    except ValueError:
        return _text("seconds must be a number\n", 400)
    if not 0 < seconds <= MAX_PROFILE_SECONDS:
        return _text(f"seconds must be in (0, {MAX_PROFILE_SECONDS}]\n", 400)
    data = await asyncio.wrap_future(ep.request_profile(seconds))
    return web.Response(
        body=data,
        headers={
            "Content-Type": "application/octet-stream",
            "Content-Disposition": 'attachment; filename="ksched.pstats"',
        },
    )


def _debug_routes(app: web.Application, ep: Endpoints) -> None:
    async def profile(request: web.Request) -> web.Response:
        return await _profile(ep, request)

    async def pprof_index(_: web.Request) -> web.Response:
        return _text("profile: the scheduling thread under cProfile (?seconds=N), pstats format\n")

    async def pprof_other(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return _text(f"unknown profile {name!r}: ksched serves only /debug/pprof/profile\n", 404)

    async def flags_index(_: web.Request) -> web.Response:
        return _text("v\n")

    async def flag_v(request: web.Request) -> web.Response:
        if request.method != "PUT":
            return _text("unsupported http method\n", 406)
        value = (await request.text()).strip()
        try:
            level = int(value)
            if level < 0:
                raise ValueError(value)
        except ValueError:
            return _text(
                f"failed set klog.logging.verbosity {value}: strconv.ParseInt: invalid syntax\n", 400
            )
        ep.set_verbosity(level)
        return _text(f"successfully set klog.logging.verbosity to {value}\n")

    app.router.add_get("/debug/profile", profile)
    if ep.request_profile is None:
        return
    app.router.add_get("/debug/pprof/", pprof_index)
    app.router.add_get("/debug/pprof/profile", profile)
    app.router.add_get("/debug/pprof/{name}", pprof_other)
    app.router.add_get("/debug/flags", flags_index)
    app.router.add_route("*", "/debug/flags/v", flag_v)


def build_app(ep: Endpoints, *, middlewares: tuple[Any, ...] = ()) -> web.Application:
    """The aiohttp application; ``middlewares`` carry authentication and authorization."""

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(ep.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def configz(_: web.Request) -> web.Response:
        if ep.componentconfig is None:
            return _text("componentconfig is not available\n", 404)
        body = orjson.dumps({"componentconfig": ep.componentconfig()})
        return web.Response(body=body, headers={"Content-Type": "application/json"})

    async def resources(_: web.Request) -> web.Response:
        assert ep.resources is not None
        return web.Response(body=ep.resources.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/metrics", metrics)
    if ep.resources is not None:
        app.router.add_get("/metrics/resources", resources)
    app.router.add_get("/configz", configz)
    health_checks.install(app, ep.health)
    _debug_routes(app, ep)
    return app
