"""The scheduler's own endpoints, served as kube-scheduler serves them (docs/serving.md).

HTTPS on --secure-port with delegated authentication (:mod:`.authn`, settings from
:mod:`.delegation`) and authorization (:mod:`.authz`) through the API server, applied by
:mod:`.filters`; TLS from :mod:`.tls`; the handlers in :mod:`.app` and :mod:`.health`; starting
and reloading in :mod:`.serve`. Everything runs on the I/O thread's loop, next to the API client,
so it costs the scheduling thread nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ksched.server.app import Endpoints, build_app
    from ksched.server.health import Health
    from ksched.server.serve import Serving, start_serving, start_site

__all__ = ["Endpoints", "Health", "Serving", "build_app", "start_serving", "start_site"]
_HOMES = {
    "Endpoints": "app",
    "build_app": "app",
    "Health": "health",
    "Serving": "serve",
    "start_serving": "serve",
    "start_site": "serve",
}
"""Where each name lives: imported on first use, so a submodule (the health checks, the
/metrics/resources collector) comes without the TLS and delegated-auth stack."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
