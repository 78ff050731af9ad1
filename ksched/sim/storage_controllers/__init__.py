"""Stand-ins for the controllers a scheduler's volume binding depends on, as one client process.

``python -m ksched.sim.storage_controllers --server URL`` runs, in one asyncio program talking
HTTP to an API server (normally the embedded one; :class:`~ksched.sim.cluster.SimCluster` and
``ksched sim`` start it as a child process):

* :mod:`.pv_controller`: kube-controller-manager's PersistentVolume controller (binding, phases,
  reclaiming, the hand-off to an external provisioner);
* :mod:`.provisioner`: a CSI external-provisioner with a simulated driver behind it (topology
  from CSINodes and node labels, allowedTopologies, CSIStorageCapacity);
* :mod:`.ephemeral`: the ephemeral volume controller (claims for ``ephemeral.volumeClaimTemplate``).

Like real controllers they list and watch their inputs (:mod:`._informer`), write with
optimistic concurrency and retry with backoff, and reach the server only over HTTP with their own
User-Agent (:data:`~ksched.sim.storage_controllers._api.USER_AGENT`), so the server's fault
injection applies to them as to any client. Each module's docstring lists where it departs from
upstream. The process prints ``ready`` on stdout once its caches are synced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from ksched.sim.storage_controllers._api import USER_AGENT, Api
from ksched.sim.storage_controllers._informer import Informer
from ksched.sim.storage_controllers.ephemeral import EphemeralController
from ksched.sim.storage_controllers.provisioner import Provisioner
from ksched.sim.storage_controllers.pv_controller import PVController

__all__ = ["USER_AGENT", "Settings", "run"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Which stand-ins run, against which server."""

    server: str
    """Base URL of the API server, e.g. ``http://127.0.0.1:41234``."""
    pv_controller: bool = True
    provisioner: bool = True
    ephemeral: bool = True
    resync_s: float = 15.0
    """Every claim and volume is synced again this often (kube-controller-manager's
    ``--pvclaimbinder-sync-period``)."""
    ca_pem: str = ""
    """PEM CA certificate to verify an ``https://`` server with (empty: the system's)."""
    token: str = ""
    """Bearer token sent with every request (empty: none)."""


async def run(settings: Settings, stop: asyncio.Event, ready: Callable[[], None] = lambda: None) -> None:
    """Run the chosen stand-ins until ``stop`` is set; ``ready`` is called once the caches synced."""
    ssl_ctx: ssl.SSLContext | bool = True
    if settings.ca_pem:
        ssl_ctx = ssl.create_default_context(cadata=settings.ca_pem)
    connector = aiohttp.TCPConnector(limit=32, ssl=ssl_ctx)
    headers = {"User-Agent": USER_AGENT}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        api = Api(session, settings.server)
        storage = settings.pv_controller or settings.provisioner
        informers: dict[str, Informer] = {}
        for resource, wanted in (
            ("persistentvolumes", storage),
            ("persistentvolumeclaims", True),
            ("storageclasses", storage),
            ("pods", settings.pv_controller or settings.ephemeral),
        ):
            if wanted:
                informers[resource] = Informer(
                    api, resource, keep=_uses_claims if resource == "pods" else None
                )
        controllers: list[PVController | Provisioner | EphemeralController] = []
        if settings.pv_controller:
            controllers.append(
                PVController(
                    api,
                    volumes=informers["persistentvolumes"],
                    claims=informers["persistentvolumeclaims"],
                    classes=informers["storageclasses"],
                    pods=informers["pods"],
                )
            )
        if settings.provisioner:
            controllers.append(
                Provisioner(
                    api,
                    volumes=informers["persistentvolumes"],
                    claims=informers["persistentvolumeclaims"],
                    classes=informers["storageclasses"],
                )
            )
        if settings.ephemeral:
            controllers.append(
                EphemeralController(api, pods=informers["pods"], claims=informers["persistentvolumeclaims"])
            )
        tasks = [asyncio.create_task(i.run(), name=f"informer-{r}") for r, i in informers.items()]
        try:
            waiting = asyncio.ensure_future(asyncio.gather(*(i.synced.wait() for i in informers.values())))
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                waiting.cancel()
                return
            ready()
            tasks += [asyncio.create_task(c.run(), name=type(c).__name__) for c in controllers]
            tasks.append(asyncio.create_task(_resync(controllers, settings.resync_s), name="resync"))
            await stopping
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task


def _uses_claims(raw: bytes) -> bool:
    """Whether a pod (its JSON) may use a claim: only those matter to the stand-ins, and most pods of
    a scheduling benchmark have no volumes, so the rest are never decoded."""
    return b'"persistentVolumeClaim"' in raw or b'"ephemeral"' in raw


async def _resync(
    controllers: list[PVController | Provisioner | EphemeralController], period_s: float
) -> None:
    while True:
        await asyncio.sleep(period_s)
        for c in controllers:
            c.resync()
