"""What the differential test compares: the scheduler's decisions, in the order they happened.

The recording is one log of ``(pod, entry)`` pairs, ``pod`` being ``namespace/name``; an entry is

- ``["bound", node]``: a binding was posted;
- ``["failed", message]``: a ``FailedScheduling`` event, with its note as the outbox received it;
- ``["nominated", node]``: ``status.nominatedNodeName`` was written (``""``: cleared);
- ``["preempting", node, [victims]]``: a preemption job was handed to the outbox;
- ``["evicted", preemptor]``: a ``Preempted`` event on a victim.

The file is gzipped JSON with pods and messages interned (tables the log refers to by index),
written with sorted keys, fixed separators and a zero gzip timestamp so that one recording is
always the same bytes. :func:`first_difference` names the earliest decision that differs and shows
that pod's history on both sides, which is what a refactor wants to read.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.differential.names import kind_of

FORMAT: Final = 2
BOUND: Final = "bound"
FAILED: Final = "failed"
NOMINATED: Final = "nominated"
PREEMPTING: Final = "preempting"
EVICTED: Final = "evicted"

Entry = list[Any]


@dataclass(slots=True)
class Recording:
    """The decisions of one replay, plus what identifies the workload they were made on."""

    workload: dict[str, Any] = field(default_factory=dict)
    """Size name, seed and workload digest."""
    log: list[tuple[str, Entry]] = field(default_factory=list)

    def add(self, pod: str, *entry: Any) -> None:
        self.log.append((pod, list(entry)))

    def by_pod(self) -> dict[str, list[Entry]]:
        """Each pod's entries, pods in the order of their first entry."""
        out: dict[str, list[Entry]] = {}
        for pod, entry in self.log:
            out.setdefault(pod, []).append(entry)
        return out

    # ---------------------------------------------------------------- file format
    def to_bytes(self) -> bytes:
        pods: dict[str, int] = {}
        messages: dict[str, int] = {}
        log = []
        for pod, e in self.log:
            if e[0] == FAILED:
                e = [FAILED, messages.setdefault(e[1], len(messages))]
            log.append([pods.setdefault(pod, len(pods)), *e])
        doc = {
            "format": FORMAT,
            "workload": self.workload,
            "pods": list(pods),
            "messages": list(messages),
            "log": log,
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return gzip.compress(text.encode(), compresslevel=9, mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes) -> Recording:
        doc = json.loads(gzip.decompress(data))
        if doc.get("format") != FORMAT:
            raise ValueError(f"golden format {doc.get('format')!r}, expected {FORMAT}: regenerate it")
        pods, messages = doc["pods"], doc["messages"]
        log = [(pods[p], [FAILED, messages[e[1]]] if e[0] == FAILED else e) for p, *e in doc["log"]]
        return cls(workload=doc["workload"], log=log)

    @classmethod
    def load(cls, path: Path) -> Recording:
        return cls.from_bytes(path.read_bytes())

    # ---------------------------------------------------------------- summary
    def summary(self) -> dict[str, dict[str, int]]:
        """Per pod kind: pods seen, placed (a binding posted), never placed, ever failed,
        preempting (handed victims to the outbox) and evicted."""
        out: dict[str, dict[str, int]] = {}
        for key, entries in self.by_pod().items():
            row = out.setdefault(
                kind_of(key.split("/", 1)[1]),
                dict.fromkeys(("pods", "placed", "never_placed", "failed", "preempting", "evicted"), 0),
            )
            kinds = [e[0] for e in entries]
            row["pods"] += 1
            row["placed" if BOUND in kinds else "never_placed"] += 1
            row["failed"] += FAILED in kinds
            row["preempting"] += PREEMPTING in kinds
            row["evicted"] += EVICTED in kinds
        return dict(sorted(out.items()))


def first_difference(expected: Recording, got: Recording) -> str | None:
    """None when the recordings agree; otherwise the earliest decision that differs, how many pods
    differ in all, and the history of the pod (or two pods) concerned on both sides."""
    if expected.workload != got.workload:
        return (
            f"the workload itself changed: golden {expected.workload} vs now {got.workload} "
            "(a generator edit or a numpy Generator stream change): regenerate the golden"
        )
    n = min(len(expected.log), len(got.log))
    at = next((i for i in range(n) if expected.log[i] != got.log[i]), n)
    if at == len(expected.log) == len(got.log):
        return None
    want, have = _by_pod_until(expected, at), _by_pod_until(got, at)
    mine, theirs = expected.by_pod(), got.by_pod()
    differing = sum(1 for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    lines = [
        f"decision #{at} of {len(expected.log)} differs ({differing} of {len(mine)} pods differ in all):",
        f"  expected: {_describe(expected.log, at)}",
        f"  got:      {_describe(got.log, at)}",
    ]
    pods = dict.fromkeys(log[at][0] for log in (expected.log, got.log) if at < len(log))
    for pod in pods:
        lines.append(f"  {pod}, decisions before #{at} then after:")
        for label, before, full in (("expected", want, mine), ("got     ", have, theirs)):
            lines.append(f"    {label}: {_history(before.get(pod, []), full.get(pod, []))}")
    return "\n".join(lines)


def _by_pod_until(recording: Recording, at: int) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for pod, entry in recording.log[:at]:
        out.setdefault(pod, []).append(entry)
    return out


def _describe(log: list[tuple[str, Entry]], at: int) -> str:
    if at >= len(log):
        return "(no more decisions)"
    pod, entry = log[at]
    return f"{pod} {_short(entry)}"


def _history(before: list[Entry], full: list[Entry], keep: int = 3) -> str:
    """The last ``keep`` entries before the difference, ``|``, then the next ``keep``."""
    head = [_short(e) for e in before[-keep:]]
    tail = [_short(e) for e in full[len(before) : len(before) + keep]]
    more = len(full) - len(before) - keep
    return " ".join([*head, "|", *tail, f"(+{more} more)" if more > 0 else ""]).rstrip()


def _short(entry: Entry, limit: int = 300) -> str:
    text = json.dumps(entry, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def summary_table(summary: Mapping[str, Mapping[str, int]]) -> str:
    """The summary as aligned text (for the record command's output)."""
    cols = ("pods", "placed", "never_placed", "failed", "preempting", "evicted")
    rows = [f"{'kind':<10}" + "".join(f"{c:>14}" for c in cols)]
    for kind, row in summary.items():
        rows.append(f"{kind:<10}" + "".join(f"{row[c]:>14}" for c in cols))
    return "\n".join(rows)
