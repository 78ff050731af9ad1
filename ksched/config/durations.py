"""Go's ``time.Duration`` text, both ways: the config file and the command line spell durations so.

``parse_go_duration`` reads what ``time.ParseDuration`` reads; ``format_go_duration`` writes what
``Duration.String`` writes (``15s``, ``1m30s``, ``100ms``, ``0s``), which is how upstream encodes a
``metav1.Duration`` in ``--write-config-to``.
"""

from __future__ import annotations

import re

from ksched.bounded import preview

_UNIT_S = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.ParseDuration`` string (``"1m30s"``, ``"500ms"``, ``"-2h"``, ``"0"``).

    Raises ValueError for anything Go would reject (a bare number other than 0, a missing unit,
    an unknown unit, spaces).
    """
    s = text
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {preview(text)}")
    total = 0.0
    pos = 0
    while pos < len(s):
        match = _DURATION_PART.match(s, pos)
        if match is None:
            raise ValueError(f"invalid duration {preview(text)}")
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        pos = match.end()
    return sign * total


def format_go_duration(seconds: float) -> str:
    """``Duration.String`` of ``seconds``: ``1h0m0s``, ``1m30s``, ``15s``, ``1.5s``, ``100ms``, ``0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _trim(rest / 1e9)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"
