"""``ksched bench --extender VERBS``: the example extender (``examples/extender/server.py``) as a
process on loopback, and the scheduler's configuration with it.

``VERBS`` is a comma-separated list of ``filter``, ``prioritize`` (and ``nodecache`` for a
node-cache-capable extender, sent node names instead of Node objects). The extender passes every
node and scores every node 0, so the decisions are the plugins' and the run measures what asking
an extender costs; :func:`figures` reads that cost from ``ksched_extender_request_duration_seconds``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ksched.bench.errors import BenchError
from ksched.bench.promtext import Scrape
from ksched.bounded import CONFIG_LIMIT, load_yaml, read_bytes

SERVER = Path(__file__).resolve().parents[2] / "examples" / "extender" / "server.py"
METRIC = "ksched_extender_request_duration_seconds"
ATTEMPT = "scheduler_scheduling_attempt_duration_seconds"
VERBS = ("filter", "prioritize", "nodecache")
_DEFAULT = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "clientConnection": {"qps": 100000, "burst": 100000},
    "enableProfiling": True,
    "leaderElection": {"leaderElect": False},
}


def parse_verbs(text: str) -> tuple[str, ...]:
    verbs = tuple(v for v in text.split(",") if v)
    unknown = [v for v in verbs if v not in VERBS]
    if unknown or not set(verbs) & {"filter", "prioritize"}:
        raise BenchError(
            f"--extender {text!r}: use a comma-separated list of {', '.join(VERBS)} with filter or prioritize"
        )
    return verbs


def start(workdir: Path, verbs: tuple[str, ...]) -> tuple[subprocess.Popen[bytes], str]:
    """The extender process and its URL, once it listens."""
    log = workdir / "extender.log"
    modes = ",".join(v for v in verbs if v != "nodecache")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", "0", "--mode", modes],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = re.search(r"listening on (http://\S+)", log.read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait(5)
    raise BenchError(f"the extender did not start; see {log}")


def config(workdir: Path, base: str | None, url: str, verbs: tuple[str, ...]) -> str:
    """The scheduler's configuration (``base``, or the bench's default) with the extender added."""
    doc: dict[str, Any] = (
        load_yaml(read_bytes(base, CONFIG_LIMIT, "a scheduler configuration").decode("utf-8"), base)
        if base
        else dict(_DEFAULT)
    )
    ext: dict[str, Any] = {"urlPrefix": url, "nodeCacheCapable": "nodecache" in verbs}
    if "filter" in verbs:
        ext["filterVerb"] = "filter"
    if "prioritize" in verbs:
        ext.update(prioritizeVerb="prioritize", weight=1)
    doc["extenders"] = [*(doc.get("extenders") or []), ext]
    path = workdir / "config-extender.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def figures(delta: Scrape) -> dict[str, Any] | None:
    """Per verb the calls and seconds spent in extender requests, and their share of the
    scheduling attempts' time (the cycle waits for filter and prioritize); None without calls."""
    verbs = {}
    for verb in ("filter", "prioritize", "bind", "preempt"):
        h = delta.hist(METRIC, verb=verb)
        if h.count:
            errors = delta.hist(METRIC, verb=verb, result="error").count
            verbs[verb] = {
                "calls": h.count,
                "errors": errors,
                "total_s": round(h.sum, 4),
                "mean_ms": round(1000 * h.sum / h.count, 4),
            }
    if not verbs:
        return None
    attempts = delta.hist(ATTEMPT).sum
    waited = sum(v["total_s"] for k, v in verbs.items() if k in ("filter", "prioritize"))
    return {"verbs": verbs, "share_of_attempts": round(waited / attempts, 4) if attempts else None}
