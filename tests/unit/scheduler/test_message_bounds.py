"""No condition message, event note or log line ksched writes is longer than its bound, for any input.

Hostile inputs drive the real loop (a recording outbox, no HTTP): a pod that every node rejects for
hundreds of long-named resources (each of 5,000 nodes lacking a different set), an unreadable pod
whose error carries a megabyte of text, and names at their longest. The bounds are
:mod:`ksched.model.limits`; the log bound is checked through the formatters ``ksched run`` installs.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from ksched.cli.logsetup import BoundedFormatter, JsonFormatter
from ksched.errors import ObjectError
from ksched.kube import events as kev
from ksched.kube.writers import event_body, pod_reference
from ksched.model.limits import (
    CONDITION_MESSAGE_BYTES,
    LOG_LINE_BYTES,
    NOTE_BYTES,
    bound_text,
    truncate_note,
    utf8_len,
)
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from tests.builders import make_node, make_pod
from tests.unit.scheduler.loop_support import RecordingOutbox, synced_scheduler

MARKER = "more bytes)"


@pytest.fixture
def logs() -> Iterator[list[str]]:
    """Every record the loop logs, formatted by both of ``ksched run``'s formatters."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(BoundedFormatter().format(record))
            lines.append(JsonFormatter().format(record))

    handler = Keep(logging.DEBUG)
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def _messages(outbox: RecordingOutbox) -> list[str]:
    out = []
    for _, patch in outbox.patches:
        out += [c["message"] for c in patch["status"].get("conditions", ()) if "message" in c]
    return out


def _assert_bounded(outbox: RecordingOutbox, logs: list[str], *, cut: bool) -> None:
    """Every text within its bound; ``cut``: the condition message had to be cut (with the marker)."""
    messages = _messages(outbox)
    assert messages and all(utf8_len(m) <= CONDITION_MESSAGE_BYTES for m in messages)
    assert any(m.endswith(MARKER) for m in messages) == cut
    notes = [e["note"] for e in outbox.events]
    assert notes and all(utf8_len(n) <= NOTE_BYTES for n in notes)
    assert any(n.endswith(" ...") for n in notes)
    assert logs and max(utf8_len(line) for line in logs) <= LOG_LINE_BYTES
    for line in logs[1::2]:
        json.loads(line)  # a cut JSON record is still one JSON object


def test_five_thousand_nodes_each_missing_different_long_named_resources(logs: list[str]) -> None:
    """The FitError lists one reason per resource: 31 (the most a pod may ask for) names at their
    longest (a 253-byte prefix, a 63-byte name) make ~10 KB: the note is cut, the condition kept."""
    sched, outbox = synced_scheduler()
    prefix = ".".join(["d" * 63] * 3) + "." + "e" * 61
    names = [f"{prefix}/{'r' * 59}{i:04d}" for i in range(31)]
    for i in range(5000):
        have = {n: "1" for j, n in enumerate(names) if j != i % 31}
        raw = make_node(f"n{i:04d}-{'x' * 200}", cpu="4", memory="8Gi", pods=10, allocatable=have)
        sched.inbox.put(kev.Upserted("nodes", node_from_dict(raw)))
    pod = pod_from_dict(make_pod("p" * 253, requests={n: "1" for n in names}))
    sched.inbox.put(kev.Upserted("pods", pod))
    sched.run(until=lambda s: bool(outbox.patches) and bool(outbox.events))
    assert "0/5000 nodes are available" in _messages(outbox)[0]
    _assert_bounded(outbox, logs, cut=False)


def test_an_unreadable_pod_with_a_megabyte_error(logs: list[str]) -> None:
    """The decoder's error quotes the value: the log line, note and condition are cut, not huge."""
    sched, outbox = synced_scheduler()
    err = ObjectError("Pod default/bad", "metadata.labels", "invalid value " + "\x00\x1b[2J☃" * 250_000)
    sched.inbox.put(kev.Invalid("pods", "default", "bad", "uid-bad", err, event_type="ADDED"))
    sched.run(until=lambda s: bool(outbox.patches))
    _assert_bounded(outbox, logs, cut=True)


@pytest.mark.parametrize("text", ["a" * 5000, "☃" * 5000, "x" * 1021 + "€€€", "\U0001f600" * 300])
def test_cuts_fall_between_characters_and_say_how_much_was_cut(text: str) -> None:
    for limit in (1024, 4096):
        cut = bound_text(text, limit)
        assert utf8_len(cut) <= limit
        if utf8_len(text) > limit:
            left = int(cut.rsplit("(", 1)[1].split()[0])
            assert text.startswith(cut[: cut.rindex(" ... (")])
            assert utf8_len(cut[: cut.rindex(" ... (")]) + left == utf8_len(text)
        else:
            assert cut == text
    note = truncate_note(text)
    assert utf8_len(note) <= NOTE_BYTES and text.startswith(note.removesuffix(" ..."))


def test_every_event_body_is_within_the_note_limit() -> None:
    """Preemption and extender events are built by ``event_body``: the bound is bytes, not characters."""
    import datetime as dt

    body: dict[str, Any] = event_body(
        regarding=pod_reference("default", "p", "u"),
        reason="Preempted",
        note="☃" * 1024,
        action="Preempting",
        now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )
    assert utf8_len(body["note"]) <= NOTE_BYTES and body["note"].endswith(" ...")


def test_a_json_record_of_escapes_stays_within_the_line_bound() -> None:
    """NUL bytes take six bytes each in JSON: the formatter cuts until the encoded line fits."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("ksched.test.bounds")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.error("bad value %s", "\x00" * 100_000)
    finally:
        log.removeHandler(handler)
        log.propagate = True
    line = stream.getvalue().rstrip("\n")
    assert utf8_len(line) <= LOG_LINE_BYTES
    assert json.loads(line)["msg"].endswith(MARKER)
