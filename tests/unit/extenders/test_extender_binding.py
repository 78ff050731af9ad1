"""Binding through an extender (upstream ``extendersBinding``, ``schedule_one_test.go``
``TestSchedulerBinding``): the first interested binder binds; an ignorable one that fails hands
over to the next and then to the ordinary binding; a non-ignorable one's error is the binding's.
The outcome arrives in the inbox as a BindDone, from the I/O thread."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ksched.errors import ExtenderError
from ksched.kube.io_thread import IOThread
from ksched.scheduler.extenders import ExtenderOutbox
from ksched.scheduler.inbox import BindDone, Inbox
from tests.builders import pod
from tests.unit.extenders.extender_support import FakeExtender
from tests.unit.scheduler.loop_support import RecordingOutbox


class FailingBinder(FakeExtender):
    def bind(self, pod: Any, node: str) -> None:
        raise ExtenderError(self.ext_name, "bind", "bind refused")


def outcome(inbox: Inbox, outbox: RecordingOutbox) -> BindDone | str:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for item in inbox.drain():
            if isinstance(item, BindDone):
                return item
        if outbox.binds:
            return "default binding"
        time.sleep(0.01)
    raise AssertionError("no outcome")


CASES = [
    ("no binder: the default binding", [FakeExtender()], "default binding", None),
    ("the binder binds", [FakeExtender(binder=True)], "bound", "FakeExtender"),
    (
        "not interested: the default binding",
        [FakeExtender(binder=True, managed=frozenset({"example.com/x"}))],
        "default binding",
        None,
    ),
    (
        "an ignorable failing binder hands over",
        [FailingBinder(binder=True, ignorable=True, ext_name="a"), FakeExtender(binder=True, ext_name="b")],
        "bound",
        "b",
    ),
    (
        "an ignorable failing binder alone: the default binding",
        [FailingBinder(binder=True, ignorable=True)],
        "default binding",
        None,
    ),
    ("a failing binder's error is the binding's", [FailingBinder(binder=True)], "error: bind refused", None),
]


@pytest.mark.parametrize(("extenders", "want", "binder"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_extenders_binding(extenders: list[FakeExtender], want: str, binder: str | None) -> None:
    inbox, outbox = Inbox(), RecordingOutbox()
    with IOThread(name="test-io") as io:
        ExtenderOutbox(outbox, extenders, io, inbox).bind(pod("p"), "n1")
        got = outcome(inbox, outbox)
    if want == "default binding":
        assert got == want and [(p.name, n) for p, n in outbox.binds] == [("p", "n1")]
        return
    assert isinstance(got, BindDone) and got.node == "n1"
    if want == "bound":
        assert got.error is None
        ext = next(e for e in extenders if e.ext_name == binder)
        assert ext.bound == [("p", "n1")]
    else:
        assert str(got.error) == want.removeprefix("error: ")
    assert outbox.binds == []
