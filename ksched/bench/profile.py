"""``--profile``: a cProfile of the scheduling thread over the measured phase, and its top functions.

The scheduler's ``/debug/profile?seconds=N`` profiles its scheduling thread (cProfile sees only the
thread that enables it) and answers when N seconds are up or when the scheduler stops; the driver asks
for the longest allowed profile when the measured pods are created and sends SIGTERM when they are
bound, so the profile covers exactly the measured phase.
"""

from __future__ import annotations

import asyncio
import io
import pstats
from pathlib import Path
from typing import Any

import aiohttp

from ksched.bench.errors import BenchError

PROFILE_MAX_S = 300


async def fetch_profile(session: aiohttp.ClientSession, port: int) -> bytes:
    async with session.get(f"http://127.0.0.1:{port}/debug/profile?seconds={PROFILE_MAX_S}") as resp:
        body = await resp.read()
        if resp.status != 200:
            raise BenchError(f"/debug/profile: HTTP {resp.status}: {body[:200].decode(errors='replace')}")
        return body


async def save_profile(task: asyncio.Task[bytes], workdir: Path) -> dict[str, Any]:
    """The scheduler stops its profile on SIGTERM and answers; write the pstats file and summarize."""
    try:
        data = await asyncio.wait_for(task, 30)
    except (TimeoutError, aiohttp.ClientError, BenchError) as exc:
        return {"path": None, "error": str(exc) or type(exc).__name__}
    path = workdir / "scheduler.pstats"
    path.write_bytes(data)
    return {"path": str(path), **top_functions(path)}


def top_functions(path: Path, n: int = 15) -> dict[str, Any]:
    """The top ``n`` functions by cumulative and by own time, as printable lines."""
    st = pstats.Stats(str(path), stream=io.StringIO())
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {"function": f"{Path(file).name}:{line}({func})", "calls": nc, "own_s": tt, "cumulative_s": ct}
        )
    total = getattr(st, "total_tt", 0.0)
    by_cum = sorted(rows, key=lambda r: -r["cumulative_s"])[:n]
    by_own = sorted(rows, key=lambda r: -r["own_s"])[:n]
    return {"total_s": round(total, 3), "by_cumulative": _rounded(by_cum), "by_own": _rounded(by_own)}


def _rounded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "own_s": round(r["own_s"], 4), "cumulative_s": round(r["cumulative_s"], 4)} for r in rows]
