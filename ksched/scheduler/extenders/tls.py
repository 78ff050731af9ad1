"""The TLS settings of an extender as an ``ssl.SSLContext`` (upstream ``makeTransport``).

As upstream: ``enableHTTPS`` without a CA (``caFile`` / ``caData``) does not verify the extender's
certificate (client-go's ``Insecure``), and says so in the log here; ``insecure`` turns
verification off; ``serverName`` is the name checked instead of the URL's host (passed per request,
:mod:`.http`); ``certFile`` / ``keyFile`` or ``certData`` / ``keyData`` are the client certificate,
the ``*Data`` variants winning over the files.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from urllib.parse import urlsplit

from ksched.config.extenders import Extender
from ksched.errors import ConfigError

log = logging.getLogger(__name__)


def ssl_context(config: Extender) -> ssl.SSLContext | None:
    """None for a plain-HTTP extender; refuses a ``urlPrefix`` that is no http(s) URL."""
    parts = urlsplit(config.url_prefix)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"extenders[urlPrefix={config.url_prefix!r}].urlPrefix",
            "must be an http:// or https:// URL such as http://127.0.0.1:8888/scheduler",
        )
    tls = config.tls
    if parts.scheme != "https" and not config.enable_https:
        return None
    insecure = tls.insecure if tls is not None else False
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    if config.enable_https and not has_ca and not insecure:
        log.warning(
            "extender %s: enableHTTPS without a CA (tlsConfig.caFile/caData): the extender's certificate "
            "is not verified, as upstream does",
            config.url_prefix,
        )
        insecure = True
    try:
        ctx = ssl.create_default_context(
            cafile=tls.ca_file or None if tls is not None else None,
            cadata=tls.ca_data.decode() if tls is not None and tls.ca_data else None,
        )
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if tls is not None:
            _client_certificate(ctx, tls.cert_file, tls.key_file, tls.cert_data, tls.key_data)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"extenders[urlPrefix={config.url_prefix!r}].tlsConfig", str(exc)) from None
    return ctx


def _client_certificate(ctx: ssl.SSLContext, cert_file: str, key_file: str, cert: bytes, key: bytes) -> None:
    """Load the client certificate; PEM bytes go through a private temporary file (the ssl module
    loads chains from files only), removed at once."""
    if cert or key:
        with tempfile.TemporaryDirectory(prefix="ksched-ext-") as tmp:
            cpath, kpath = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            for path, data in ((cpath, cert), (kpath, key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
            ctx.load_cert_chain(cpath, kpath if key else None)
        return
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file or None)
