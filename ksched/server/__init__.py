"""The scheduler's own endpoints, served as kube-scheduler serves them (docs/serving.md).

HTTPS on --secure-port with delegated authentication (:mod:`.authn`, settings from
:mod:`.delegation`) and authorization (:mod:`.authz`) through the API server, applied by
:mod:`.filters`; TLS from :mod:`.tls`; the handlers in :mod:`.app` and :mod:`.health`; starting
and reloading in :mod:`.serve`. Everything runs on the I/O thread's loop, next to the API client,
so it costs the scheduling thread nothing.
"""

from __future__ import annotations

from ksched.server.app import Endpoints, build_app
from ksched.server.health import Health
from ksched.server.serve import Serving, start_serving, start_site

__all__ = ["Endpoints", "Health", "Serving", "build_app", "start_serving", "start_site"]
