"""Tiny raw-HTTP helpers for tests that need to see exact status codes, bodies and stream frames."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit


def request(
    url: str, method: str, path: str, body: bytes | str | None = None, content_type: str = "application/json"
) -> tuple[int, dict[str, str], Any]:
    """One request; returns (status, headers, parsed JSON body or text)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        data = body.encode() if isinstance(body, str) else body
        conn.request(
            method, path, body=data, headers={"Content-Type": content_type} if data is not None else {}
        )
        resp = conn.getresponse()
        raw = resp.read()
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw.decode()
        return resp.status, dict(resp.getheaders()), parsed
    finally:
        conn.close()


def watch(url: str, path: str, max_events: int, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """Read up to ``max_events`` frames from a watch stream (stops early on end of stream)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout_s)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        out = []
        while len(out) < max_events:
            line = resp.readline()
            if not line:
                break
            out.append(json.loads(line))
        return out
    finally:
        conn.close()
