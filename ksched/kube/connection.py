"""From kubeconfig / in-cluster service account to what one aiohttp session needs.

The ``kubernetes`` package does the loading (contexts, merged ``KUBECONFIG`` paths, certificate and
key data written to temporary files, tokens, token files, exec credential plugins, in-cluster service
account); this module turns the resulting ``kubernetes.client.Configuration`` into a
:class:`Connection`: the server URL, an :class:`ssl.SSLContext` and a :class:`Credentials` object that
produces the ``Authorization`` header. The generated API classes are never used.

Where the configuration comes from (:func:`load_connection`), first match wins:

1. the ``kubeconfig`` argument (``--kubeconfig``), with ``context`` if given;
2. the ``KUBECONFIG`` environment variable (a ``:``-separated list is merged, as kubectl does);
3. the in-cluster service account, when ``KUBERNETES_SERVICE_HOST`` is set;
4. ``~/.kube/config``.

An explicit path or ``KUBECONFIG`` that cannot be loaded is an error, not a reason to try the next
source: silently talking to another cluster would be worse than stopping.

Credentials: the header is cached. When the configuration has a refresh hook (exec plugins and
OIDC with an expiry, the in-cluster token file) :meth:`Credentials.refresh` is due every
``refresh_interval_s`` and calls it; the ``kubernetes`` package re-runs the plugin five minutes before
the token expires and re-reads the service-account token every minute. After a 401 the client calls
:meth:`Credentials.reload`, which loads the whole configuration again (a new exec run, a re-read
token file) at most once per ``reload_min_interval_s``. Both block (an exec plugin is a subprocess),
so the client runs them in an executor, never on the event loop.

Not handled: rotating client certificates without a restart (the SSL context is built once), and
``proxy-url`` schemes other than http(s).
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ksched.bounded import OBJECT_LIMIT, LimitError, load_yaml, read_bytes
from ksched.errors import InputError

IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeConfigError(InputError):
    """No usable API configuration: a kubeconfig that cannot be read, a missing context, bad TLS files."""


class Credentials:
    """The ``Authorization`` header for every request, cached and refreshed on demand (thread-safe).

    ``config`` is a loaded ``kubernetes.client.Configuration``; ``reload`` builds a fresh one (used
    after a 401), or is ``None`` when there is nothing to reload from.
    """

    def __init__(
        self,
        config: Any,
        *,
        reload: Callable[[], Any] | None = None,
        refresh_interval_s: float = 30.0,
        reload_min_interval_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._reload = reload
        self._refresh_interval_s = refresh_interval_s
        self._reload_min_interval_s = reload_min_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_reload = -float("inf")
        self.header: str | None = _authorization(config)
        """The current header value (``Bearer ...``, ``Basic ...``) or ``None`` (no credentials)."""
        self._next_refresh = clock() + refresh_interval_s

    @property
    def refreshable(self) -> bool:
        """Whether the header can change over time (the configuration has a refresh hook)."""
        return getattr(self._config, "refresh_api_key_hook", None) is not None

    @property
    def reloadable(self) -> bool:
        return self._reload is not None

    def due(self) -> bool:
        """Whether :meth:`refresh` should run before the next request (cheap; no I/O)."""
        return self.refreshable and self._clock() >= self._next_refresh

    def refresh(self) -> str | None:
        """Run the configuration's refresh hook and cache the header. Blocking."""
        with self._lock:
            self.header = _authorization(self._config)
            self._next_refresh = self._clock() + self._refresh_interval_s
            return self.header

    def reload(self) -> bool:
        """Load the configuration again (after a 401); ``True`` if it was reloaded. Blocking."""
        if self._reload is None:
            return False
        with self._lock:
            now = self._clock()
            if now - self._last_reload < self._reload_min_interval_s:
                return False
            self._last_reload = now
            self._config = self._reload()
            self.header = _authorization(self._config)
            self._next_refresh = now + self._refresh_interval_s
            return True


def _authorization(cfg: Any) -> str | None:
    """The header the generated client would send: a bearer token (any prefix) or basic auth."""
    key = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
    if key:
        return str(key)
    if getattr(cfg, "username", None) or getattr(cfg, "password", None):
        return str(cfg.get_basic_auth_token())
    return None


@dataclass(frozen=True, slots=True)
class Connection:
    """Everything the HTTP session needs to reach one API server."""

    server: str
    """Base URL without a trailing slash, e.g. ``https://10.0.0.1:6443``."""
    ssl: ssl.SSLContext | None
    """For https; ``None`` for plain http."""
    credentials: Credentials
    source: str
    """Where the configuration came from, for logs and error messages."""
    tls_server_name: str | None = None
    """SNI / verification name when it differs from the URL's host (kubeconfig ``tls-server-name``)."""
    proxy: str | None = None


def ssl_context(cfg: Any, source: str) -> ssl.SSLContext:
    """An SSL context from the configuration's CA, client certificate/key and ``verify_ssl``."""
    try:
        if cfg.verify_ssl:
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
            if cfg.assert_hostname is False:
                ctx.check_hostname = False
        else:  # insecure-skip-tls-verify: true
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if cfg.cert_file:
            ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    except (OSError, ssl.SSLError) as exc:
        files = ", ".join(
            f"{k}={getattr(cfg, k)!r}" for k in ("ssl_ca_cert", "cert_file", "key_file") if getattr(cfg, k)
        )
        raise KubeConfigError(
            f"{source}: cannot build the TLS context ({files or 'system CAs'}): {exc}; "
            "check the certificate-authority and client-certificate entries"
        ) from exc
    return ctx


def connection_from_configuration(
    cfg: Any, *, source: str, reload: Callable[[], Any] | None = None, refresh_interval_s: float = 30.0
) -> Connection:
    """Turn a loaded ``kubernetes.client.Configuration`` into a :class:`Connection`."""
    server = str(cfg.host or "").rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise KubeConfigError(f"{source}: cluster server {server!r} is not an http(s) URL")
    return Connection(
        server=server,
        ssl=ssl_context(cfg, source) if server.startswith("https://") else None,
        credentials=Credentials(cfg, reload=reload, refresh_interval_s=refresh_interval_s),
        source=source,
        tls_server_name=getattr(cfg, "tls_server_name", None) or None,
        proxy=getattr(cfg, "proxy", None) or None,
    )


def _kubeconfig_loader(path: str, context: str | None) -> Callable[[], Any]:
    def load() -> Any:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
        return cfg

    return load


def _from_kubeconfig(path: str, context: str | None, origin: str) -> Connection:
    from kubernetes.config.config_exception import ConfigException

    source = f"kubeconfig {path} ({origin})" + (f", context {context!r}" if context else "")
    expanded = os.path.expanduser(path)
    parts = [p for p in expanded.split(os.pathsep) if p]
    if not parts or not any(Path(p).is_file() for p in parts):
        raise KubeConfigError(f"{source}: no such file; pass --kubeconfig or set KUBECONFIG to a kubeconfig")
    load = _kubeconfig_loader(expanded, context)
    try:
        for part in parts:  # the kubernetes package's yaml.safe_load has no size or alias limit
            if Path(part).is_file():
                load_yaml(read_bytes(part, OBJECT_LIMIT, "a kubeconfig"), part)
    except LimitError as exc:
        raise KubeConfigError(f"{source}: {exc}") from None
    except (OSError, ValueError, yaml.YAMLError):
        pass  # unreadable or malformed: the kubernetes package's loader says what, as it always did
    try:
        cfg = load()
    except ConfigException as exc:
        raise KubeConfigError(f"{source}: {exc}") from exc
    except (OSError, ValueError, TypeError, KeyError) as exc:  # unreadable or malformed YAML
        raise KubeConfigError(f"{source}: cannot load: {exc!r}") from exc
    return connection_from_configuration(cfg, source=source, reload=load)


def incluster_connection(
    *,
    token_path: str = IN_CLUSTER_TOKEN,
    ca_path: str = IN_CLUSTER_CA,
    environ: dict[str, str] | None = None,
) -> Connection:
    """The pod's service account: ``KUBERNETES_SERVICE_HOST``/``_PORT``, its token and CA files."""
    from kubernetes import client
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    env = dict(os.environ) if environ is None else environ

    def load() -> Any:
        cfg = client.Configuration()
        InClusterConfigLoader(token_filename=token_path, cert_filename=ca_path, environ=env).load_and_set(cfg)
        return cfg

    try:
        cfg = load()
    except ConfigException as exc:
        raise KubeConfigError(f"in-cluster service account: {exc}") from exc
    return connection_from_configuration(cfg, source="in-cluster service account", reload=load)


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """Find and load the API configuration (order in the module docstring)."""
    if kubeconfig:
        return _from_kubeconfig(kubeconfig, context, "--kubeconfig")
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return _from_kubeconfig(env, context, "KUBECONFIG")
    tried: list[str] = []
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            return incluster_connection()
        except KubeConfigError as exc:
            tried.append(str(exc))
    else:
        tried.append("in-cluster service account: KUBERNETES_SERVICE_HOST is not set")
    try:
        return _from_kubeconfig(DEFAULT_KUBECONFIG, context, "default location")
    except KubeConfigError as exc:
        tried.append(str(exc))
        if Path(os.path.expanduser(DEFAULT_KUBECONFIG)).is_file():
            raise
    raise KubeConfigError(
        "no Kubernetes API configuration found; tried: "
        + "; ".join(tried)
        + ". Pass --kubeconfig PATH, set KUBECONFIG, or run in a pod with a service account"
    )
