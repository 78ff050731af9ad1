"""Start the secure port (and the optional insecure one) on the I/O thread's loop.

The secure port (``--secure-port``, 10259; 0 turns it off) serves HTTPS with the filters of
:mod:`ksched.server.filters`; the insecure port (ksched's ``--insecure-port``, off unless given)
serves the same handlers over plain HTTP without authentication, for local scrapes in tests and
benchmarks. Everything is built before the first socket opens, so a bad certificate, flag or
unreachable lookup (without --authentication-tolerate-lookup-failure) fails the start.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from aiohttp import web

from ksched.kube.client import ApiClient
from ksched.kube.connection import Connection
from ksched.server import authn, authz
from ksched.server.app import Endpoints, build_app
from ksched.server.delegation import (
    RELOAD_INTERVAL_S,
    AuthSources,
    access_reviewer,
    delegated_connection,
    token_reviewer,
)
from ksched.server.filters import auth_middleware
from ksched.server.options import AuthorizationOptions, ServingOptions
from ksched.server.tls import ServingTLS

log = logging.getLogger(__name__)
T = TypeVar("T")


class Loop(Protocol):
    """What the server needs of the I/O thread (:class:`ksched.kube.io_thread.IOThread`)."""

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T: ...
    def submit(self, coro: Coroutine[Any, Any, T]) -> Any: ...
    def add_closer(self, closer: Callable[[], Awaitable[None]]) -> None: ...


ClientFactory = Callable[[Connection, str], ApiClient]


@dataclass(frozen=True, slots=True)
class Serving:
    """What was started: the bound ports (None: not served)."""

    secure_port: int | None
    insecure_port: int | None


async def start_site(
    app: web.Application,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None = None,
    *,
    reuse_port: bool = False,
    reuse_address: bool = False,
) -> tuple[web.AppRunner, int]:
    """Serve ``app``; returns the runner (for cleanup) and the bound port (useful with port 0).
    ``reuse_port``/``reuse_address`` are --permit-port-sharing/--permit-address-sharing."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(
        runner,
        host,
        port,
        ssl_context=ssl_context,
        reuse_port=reuse_port or None,
        reuse_address=reuse_address or None,
    )
    await site.start()
    bound = port
    for address in runner.addresses:  # (host, port, ...) of each bound socket
        if isinstance(address, tuple) and len(address) >= 2:
            bound = int(address[1])
            break
    return runner, bound


def _authorizer(opts: AuthorizationOptions, client: ApiClient | None) -> authz.UnionAuthorizer:
    chain: list[authz.Authorizer] = []
    if opts.always_allow_groups:
        chain.append(authz.group_authorizer(opts.always_allow_groups))
    if opts.always_allow_paths:
        chain.append(authz.path_authorizer(opts.always_allow_paths))
    if client is None:
        log.warning(
            "No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't work."
        )
    else:
        chain.append(
            authz.ReviewAuthorizer(
                access_reviewer(client), allow_ttl_s=opts.allow_cache_ttl_s, deny_ttl_s=opts.deny_cache_ttl_s
            )
        )
    return authz.UnionAuthorizer(chain)


def _authenticator(sources: AuthSources, ttl_s: float, anonymous: bool) -> authn.UnionAuthenticator:
    chain: list[authn.Authenticator] = [
        authn.RequestHeaderAuthenticator(lambda: sources.request_header),
        authn.X509Authenticator(lambda: sources.client_ca),
    ]
    if sources.client is not None:
        cache = authn.TokenCache(token_reviewer(sources.client), success_ttl_s=ttl_s, failure_ttl_s=ttl_s)
        chain.append(authn.BearerTokenAuthenticator(cache))
    return authn.UnionAuthenticator(chain, anonymous=anonymous)


async def _reload_every(sources: AuthSources, tls: ServingTLS, interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            await sources.refresh()
            tls.refresh()
        except Exception as exc:  # keep serving with the last good settings
            log.warning("reloading the authentication configuration failed, keeping the last one: %s", exc)


def _clients(
    io: Loop, options: ServingOptions, make_client: ClientFactory
) -> tuple[ApiClient | None, ApiClient | None]:
    authn_conn = delegated_connection(options.authentication.kubeconfig, "authentication")
    authz_conn = delegated_connection(options.authorization.kubeconfig, "authorization")
    authn_client = make_client(authn_conn, "delegated-authentication") if authn_conn else None
    authz_client = make_client(authz_conn, "delegated-authorization") if authz_conn else None
    return authn_client, authz_client  # closed with the I/O loop


def start_serving(
    io: Loop, options: ServingOptions, endpoints: Endpoints, make_client: ClientFactory
) -> Serving:
    """Build the filters and TLS, open the ports; everything stops with the I/O loop."""
    secure_port = insecure_port = None
    sec = options.secure
    options.refuse_unsupported()
    if sec.secure_port:
        authn_client, authz_client = _clients(io, options, make_client)
        a = options.authentication
        sources = AuthSources(a, authn_client)
        io.run(sources.initial())
        maybe_cas = bool(a.client_ca_file or a.requestheader_client_ca_file) or (
            authn_client is not None and not a.skip_lookup
        )
        tls = ServingTLS(sec, sources.all_cas, request_client_certs=maybe_cas)
        middleware = auth_middleware(
            _authenticator(sources, a.token_webhook_cache_ttl_s, a.anonymous),
            _authorizer(options.authorization, authz_client),
        )
        runner, secure_port = io.run(
            start_site(
                build_app(endpoints, middlewares=(middleware,)),
                sec.bind_address,
                sec.secure_port,
                tls.context,
            )
        )
        io.add_closer(runner.cleanup)
        io.submit(_reload_every(sources, tls, RELOAD_INTERVAL_S))
        log.info("Serving securely on %s:%d", sec.bind_address, secure_port)
        log.info("serving /metrics, /healthz and /readyz on https://%s:%d", sec.bind_address, secure_port)
    if options.insecure_port is not None:
        runner, insecure_port = io.run(
            start_site(build_app(endpoints), options.insecure_bind_address, options.insecure_port)
        )
        io.add_closer(runner.cleanup)
        log.info(
            "serving /metrics, /healthz and /readyz on http://%s:%d (insecure: no authentication)",
            options.insecure_bind_address,
            insecure_port,
        )
    return Serving(secure_port, insecure_port)
