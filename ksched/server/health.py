"""/healthz, /livez and /readyz as upstream's healthz package serves them for kube-scheduler.

Checks (cmd/kube-scheduler/app/server.go): /healthz runs ``leaderElection`` when leader election is
on, else ``ping``; /livez runs ``ping``; /readyz runs ``leaderElection`` (with leader election),
``shutdown`` and ``sched-handler-sync``. Output as upstream: ``ok`` (200) when every check passes,
the per-check list with ``?verbose``; on failure 500 with ``[-]<name> failed: reason withheld``
lines and ``<name> check failed``. ``?exclude=<check>`` skips a check; ``/<endpoint>/<check>`` runs
one.

``leaderElection`` (upstream's leaderelection.HealthzAdaptor with kube-scheduler's 20 s timeout):
while leading, fails once the Lease has not been renewed for leaseDuration + 20 s; a standby passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server imports aiohttp.web; a process that serves nothing never needs it
    from aiohttp import web

LEADER_ELECTION_TIMEOUT_S = 20.0
"""kube-scheduler's NewLeaderHealthzAdaptor(time.Second * 20)."""

Check = tuple[str, Callable[[], str | None]]
"""(name, run): ``run`` returns None when healthy, else the reason."""


@dataclass(slots=True)
class Health:
    """What the checks read; written by the scheduling thread and the elector (plain fields)."""

    synced: bool = False
    leader_election: bool = False
    leading: bool = False
    stopping: bool = False
    details: dict[str, str] = field(default_factory=dict)
    last_renewal: Callable[[], float] | None = None
    """Monotonic time of the Lease's last renewal while leading (None: no leader election)."""
    lease_duration_s: float = 15.0
    lease_name: str = ""
    clock: Callable[[], float] = time.monotonic


def leader_check(health: Health) -> str | None:
    if not health.leading or health.last_renewal is None:
        return None
    if health.clock() - health.last_renewal() > health.lease_duration_s + LEADER_ELECTION_TIMEOUT_S:
        return f"failed election to renew leadership on lease {health.lease_name}"
    return None


def checks(health: Health) -> dict[str, list[Check]]:
    """The checks of each endpoint, in upstream's order."""
    ping: Check = ("ping", lambda: None)
    leader: Check = ("leaderElection", lambda: leader_check(health))
    shutdown: Check = ("shutdown", lambda: "process is shutting down" if health.stopping else None)
    sync: Check = (
        "sched-handler-sync",
        lambda: None if health.synced else "handlers are not fully synchronized",
    )
    le = [leader] if health.leader_election else []
    return {"healthz": le or [ping], "livez": [ping], "readyz": [*le, shutdown, sync]}


def _plain(text: str, status: int = 200) -> web.Response:
    from aiohttp import web

    return web.Response(
        text=text, status=status, headers={"X-Content-Type-Options": "nosniff"}, charset="utf-8"
    )


def root_handler(name: str, endpoint_checks: list[Check]) -> Callable[[web.Request], object]:
    async def handle(request: web.Request) -> web.Response:
        excluded = {e for v in request.query.getall("exclude", []) for e in v.split(",") if e}
        lines: list[str] = []
        failed = False
        for check, run in endpoint_checks:
            if check in excluded:
                excluded.discard(check)
                lines.append(f"[+]{check} excluded: ok\n")
                continue
            if run() is not None:
                failed = True
                lines.append(f"[-]{check} failed: reason withheld\n")
            else:
                lines.append(f"[+]{check} ok\n")
        if excluded:
            quoted = ", ".join(f'"{e}"' for e in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        if failed:
            return _plain("".join(lines) + f"{name} check failed\n", 500)
        if "verbose" not in request.query:
            return _plain("ok")
        return _plain("".join(lines) + f"{name} check passed\n")

    return handle


def check_handler(run: Callable[[], str | None]) -> Callable[[web.Request], object]:
    async def handle(_: web.Request) -> web.Response:
        reason = run()
        if reason is None:
            return _plain("ok")
        return _plain(f"internal server error: {reason}\n", 500)

    return handle


def install(app: web.Application, health: Health) -> None:
    for name, endpoint_checks in checks(health).items():
        app.router.add_get(f"/{name}", root_handler(name, endpoint_checks))  # type: ignore[arg-type]
        for check, run in endpoint_checks:
            app.router.add_get(f"/{name}/{check}", check_handler(run))  # type: ignore[arg-type]
