"""Polling and plain HTTP GET for the integration harnesses, written once.

Integration tests drive real processes and threads over HTTP, so they wait for something to
become true (a pod bound, a leader elected) and read small endpoints (``/healthz``, ``/metrics``).
:func:`wait_until` is the only poll loop: it returns the predicate's truthy value, so a test can
wait for and use a result in one line, and it fails with an :class:`AssertionError` naming what it
waited for. :func:`http_get` returns HTTP error statuses as values (a 403 or a 503 is what many
tests assert) and raises only when nothing answers; :func:`probe_get` turns that into status 0 for
harnesses that poll a server which may not be up yet.

Not here: raw ``http.client`` requests that must see headers, interim responses or watch frames
(``tests/integration/sim/simhttp.py``), and the API client under test, which tests never patch.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout_s: float = 20.0,
    interval_s: float = 0.05,
    what: str = "",
) -> T:
    """Call ``predicate`` every ``interval_s`` until it returns something truthy, and return that.

    The predicate runs at least once and once more after the deadline passes, so a condition that
    becomes true while the test sleeps is not reported as a timeout. After ``timeout_s`` seconds it
    raises AssertionError naming ``what`` (or the predicate): put in ``what`` whatever makes the
    failure readable, e.g. the scheduler's log.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what or predicate}")
        time.sleep(interval_s)


def http_get(
    url: str,
    *,
    timeout_s: float = 5.0,
    context: ssl.SSLContext | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """(status, body) of GET ``url``; an HTTP error status is returned with its body, not raised.

    Connection and TLS failures raise (``urllib.error.URLError``, an OSError) so that a test can
    assert them; the body is decoded as UTF-8 with replacement, which never fails a test on its own.
    """
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(errors="replace")


def probe_get(url: str, *, timeout_s: float = 5.0) -> tuple[int, str]:
    """:func:`http_get`, but (0, the error) when nothing answers: for polling a server still starting."""
    try:
        return http_get(url, timeout_s=timeout_s)
    except OSError as exc:
        return 0, str(exc)
