"""What ksched's API clients count about their requests: client-go's REST client metrics.

client-go (``rest/request.go``, ``tools/metrics``) reports, and component-base registers
(``component-base/metrics/prometheus/restclient/metrics.go``):

- ``rest_client_requests_total{code, method, host}``: one per request, for its final answer (the
  status code, or ``<error>`` when no answer came), watches included;
- ``rest_client_request_retries_total{code, verb, host}``: one per attempt that was retried;
- ``rest_client_request_duration_seconds{verb, host}``: a request from the first token wait to the
  last answer, retries included; not for watches;
- ``rest_client_rate_limiter_duration_seconds{verb, host}``: each wait on the client-side limiter;
- ``rest_client_request_size_bytes{verb, host}``: each attempt's body (0 without one);
- ``rest_client_response_size_bytes{verb, host}``: the final answer's body.

``host`` is the server URL's ``host[:port]``, ``verb`` and ``method`` the HTTP method. ksched's
limiter applies to writes only (reads and watches never wait, so they record no limiter wait);
client-go waits on every non-watch request.

A :class:`RequestTally` keeps the counts in plain dictionaries for the one event loop that writes them
(``ksched.metrics.RestClientMetrics`` renders them at scrape time on that same loop). The bind worker
child keeps its own and sends what it counted since the last time (:meth:`RequestTally.take`) with
its answers; the scheduler adds that in (:meth:`RequestTally.merge`), so its ``/metrics`` counts the
bindings' requests too.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any, Final, Protocol

log = logging.getLogger(__name__)

DURATION_BUCKETS_S: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""component-base's buckets of the request and rate-limiter durations."""
SIZE_BUCKETS_BYTES: Final = (
    64.0, 256.0, 512.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
)
"""component-base's buckets of the request and response sizes: 64 bytes to 16 MiB."""
NO_ANSWER: Final = "<error>"
"""client-go's ``code`` label of a request that got no HTTP answer."""

_HISTOGRAMS = ("duration", "rate_limiter", "request_size", "response_size")
_COUNTERS = ("requests", "retries")


class RequestRecorder(Protocol):
    """What :class:`~ksched.kube.client.ApiClient` reports about its requests."""

    def attempt(self, verb: str, host: str, sent: int) -> None:
        """An attempt went out with a body of ``sent`` bytes."""

    def retried(self, verb: str, host: str, code: str) -> None:
        """An attempt answered ``code`` (or :data:`NO_ANSWER`) and is repeated."""

    def throttled(self, verb: str, host: str, seconds: float) -> None:
        """An attempt waited ``seconds`` for the client-side rate limiter."""

    def done(self, verb: str, host: str, code: str, seconds: float | None, received: int | None) -> None:
        """A request ended with ``code``, after ``seconds`` (None for a watch: not observed) and with
        an answer of ``received`` bytes (None: no answer, or a watch)."""


class Buckets:
    """One label set of a histogram: counts per bucket (the last is +Inf) and the sum.

    The same record as :class:`ksched.metrics.CycleHistogramChild`; kept apart because ``kube`` sees
    only ``model`` and ``errors`` and ``metrics`` is a leaf (the import contracts)."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class RequestTally:
    """The REST client metrics of one process (a :class:`RequestRecorder`); one event loop writes it."""

    duration_bounds: tuple[float, ...] = DURATION_BUCKETS_S
    size_bounds: tuple[float, ...] = SIZE_BUCKETS_BYTES

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = {}
        """(code, method, host) -> requests."""
        self.retries: dict[tuple[str, str, str], int] = {}
        """(code, verb, host) -> retried attempts."""
        self.duration: dict[tuple[str, str], Buckets] = {}
        self.rate_limiter: dict[tuple[str, str], Buckets] = {}
        self.request_size: dict[tuple[str, str], Buckets] = {}
        self.response_size: dict[tuple[str, str], Buckets] = {}
        """(verb, host) -> histogram."""

    # -- recording (RequestRecorder) ------------------------------------------------------------
    def attempt(self, verb: str, host: str, sent: int) -> None:
        _buckets(self.request_size, (verb, host), self.size_bounds).observe(sent)

    def retried(self, verb: str, host: str, code: str) -> None:
        key = (code, verb, host)
        self.retries[key] = self.retries.get(key, 0) + 1

    def throttled(self, verb: str, host: str, seconds: float) -> None:
        _buckets(self.rate_limiter, (verb, host), self.duration_bounds).observe(seconds)

    def done(self, verb: str, host: str, code: str, seconds: float | None, received: int | None) -> None:
        key = (code, verb, host)
        self.requests[key] = self.requests.get(key, 0) + 1
        if seconds is not None:
            _buckets(self.duration, (verb, host), self.duration_bounds).observe(seconds)
        if received is not None:
            _buckets(self.response_size, (verb, host), self.size_bounds).observe(received)

    # -- across processes -----------------------------------------------------------------------
    def take(self) -> dict[str, Any] | None:
        """Everything counted since the last call, as JSON-ready data (None: nothing), and forget it."""
        if not (self.requests or self.retries or any(getattr(self, n) for n in _HISTOGRAMS)):
            return None
        delta: dict[str, Any] = {n: [[*k, v] for k, v in getattr(self, n).items()] for n in _COUNTERS}
        for name in _HISTOGRAMS:
            delta[name] = [[*k, b.counts, b.sum] for k, b in getattr(self, name).items()]
        for name in (*_COUNTERS, *_HISTOGRAMS):
            getattr(self, name).clear()
        return delta

    def merge(self, delta: Mapping[str, Any]) -> None:
        """Add what another process's tally :meth:`take` returned; malformed parts are logged and
        left out (a scrape must not fail over them)."""
        try:
            for name in _COUNTERS:
                table = getattr(self, name)
                for code, verb, host, n in delta.get(name, ()):
                    key = (str(code), str(verb), str(host))
                    table[key] = table.get(key, 0) + int(n)
            for name in _HISTOGRAMS:
                bounds = self.size_bounds if name.endswith("size") else self.duration_bounds
                for verb, host, counts, total in delta.get(name, ()):
                    if len(counts) != len(bounds) + 1:
                        raise ValueError(f"{name}: {len(counts)} buckets, expected {len(bounds) + 1}")
                    b = _buckets(getattr(self, name), (str(verb), str(host)), bounds)
                    b.counts = [a + int(c) for a, c in zip(b.counts, counts, strict=True)]
                    b.sum += float(total)
        except (AttributeError, TypeError, ValueError) as exc:
            log.error("ignoring a malformed request-metrics delta: %s", exc)


Histograms = dict[tuple[str, str], Buckets]


def _buckets(table: Histograms, key: tuple[str, str], bounds: tuple[float, ...]) -> Buckets:
    found = table.get(key)
    if found is None:
        found = table[key] = Buckets(bounds)
    return found
