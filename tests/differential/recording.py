"""What the differential test compares: per pod, the scheduler's decisions in the order they happened.

Each pod (``namespace/name``) has a list of entries:

- ``["bound", node]``: a binding was posted;
- ``["failed", message]``: a ``FailedScheduling`` event, with its note as the outbox received it;
- ``["nominated", node]``: ``status.nominatedNodeName`` was written (``""``: cleared);
- ``["preempting", node, [victims]]``: a preemption job was handed to the outbox;
- ``["evicted", preemptor]``: a ``Preempted`` event on a victim.

Pods are kept in the order of their first entry. The file is gzipped JSON with the messages
interned (a table, entries refer to it by index), written with sorted keys, fixed separators and a
zero gzip timestamp so that one recording is always the same bytes. :func:`first_difference`
explains a mismatch pod by pod, which is what a refactor wants to read.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.differential.names import kind_of

FORMAT: Final = 1
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
    pods: dict[str, list[Entry]] = field(default_factory=dict)

    def add(self, pod: str, *entry: Any) -> None:
        self.pods.setdefault(pod, []).append(list(entry))

    # ---------------------------------------------------------------- file format
    def to_bytes(self) -> bytes:
        messages: dict[str, int] = {}
        pods = []
        for key, entries in self.pods.items():
            packed = []
            for e in entries:
                if e[0] == FAILED:
                    e = [FAILED, messages.setdefault(e[1], len(messages))]
                packed.append(e)
            pods.append([key, packed])
        doc = {"format": FORMAT, "workload": self.workload, "messages": list(messages), "pods": pods}
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return gzip.compress(text.encode(), compresslevel=9, mtime=0)

    @classmethod
    def from_bytes(cls, data: bytes) -> Recording:
        doc = json.loads(gzip.decompress(data))
        if doc.get("format") != FORMAT:
            raise ValueError(f"golden format {doc.get('format')!r}, expected {FORMAT}: regenerate it")
        messages = doc["messages"]
        pods = {
            key: [[FAILED, messages[e[1]]] if e[0] == FAILED else e for e in entries]
            for key, entries in doc["pods"]
        }
        return cls(workload=doc["workload"], pods=pods)

    def save(self, path: Path) -> None:
        path.write_bytes(self.to_bytes())

    @classmethod
    def load(cls, path: Path) -> Recording:
        return cls.from_bytes(path.read_bytes())

    # ---------------------------------------------------------------- summary
    def summary(self) -> dict[str, dict[str, int]]:
        """Per pod kind: pods seen, placed (last binding), never placed, ever failed, preempting
        (handed victims to the outbox) and evicted."""
        out: dict[str, dict[str, int]] = {}
        for key, entries in self.pods.items():
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
    """None when the recordings agree; otherwise a readable account of the first pod that differs
    (in the expected order), how many pods differ, and where the order of first decisions parts."""
    if expected.workload != got.workload:
        return (
            f"the workload itself changed: golden {expected.workload} vs now {got.workload} "
            "(a generator edit or a numpy Generator stream change): regenerate the golden"
        )
    differing = [k for k in expected.pods.keys() | got.pods.keys() if expected.pods.get(k) != got.pods.get(k)]
    if not differing:
        order_e, order_g = list(expected.pods), list(got.pods)
        if order_e == order_g:
            return None
        i = next(i for i, (a, b) in enumerate(zip(order_e, order_g, strict=True)) if a != b)
        return f"same decisions per pod, but in another order from position {i}: {order_e[i]} vs {order_g[i]}"
    rank = {k: i for i, k in enumerate(expected.pods)}
    first = min(differing, key=lambda k: rank.get(k, len(rank)))
    return _explain(first, expected.pods.get(first), got.pods.get(first), len(differing), len(expected.pods))


def _explain(pod: str, want: list[Entry] | None, have: list[Entry] | None, n: int, total: int) -> str:
    lines = [f"{n} of {total} pods differ; the first is {pod}:"]
    want, have = want or [], have or []
    at = next(
        (i for i, (a, b) in enumerate(zip(want, have, strict=False)) if a != b), min(len(want), len(have))
    )
    lines.append(f"  entries agree up to #{at}")
    for label, entries in (("expected", want), ("got     ", have)):
        lines.append(f"  {label}:")
        for i, e in enumerate(entries[max(0, at - 2) : at + 3], start=max(0, at - 2)):
            lines.append(f"    {'>' if i == at else ' '} #{i} {_short(e)}")
        if len(entries) > at + 3:
            lines.append(f"      ... {len(entries) - at - 3} more")
    return "\n".join(lines)


def _short(entry: Entry, limit: int = 400) -> str:
    text = json.dumps(entry, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def summary_table(summary: Mapping[str, Mapping[str, int]]) -> str:
    """The summary as aligned text (for the record command's output)."""
    cols = ("pods", "placed", "never_placed", "failed", "preempting", "evicted")
    rows = [f"{'kind':<10}" + "".join(f"{c:>14}" for c in cols)]
    for kind, row in summary.items():
        rows.append(f"{kind:<10}" + "".join(f"{row[c]:>14}" for c in cols))
    return "\n".join(rows)
