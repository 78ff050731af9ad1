"""The malformed-input run, small: 100 objects of the classes the embedded cluster refuses today.

The same runner as the full run (``python -m tests.malformed.run --objects 10000 --seed 1``), so CI
keeps it working: a real ``ksched run``, a probe pod bound within 1 s after every object, and every
count of the summary clean.
"""

from __future__ import annotations

import io

from tests.malformed.run import run


def test_a_hundred_objects_leave_the_scheduler_scheduling() -> None:
    out = io.StringIO()
    tally = run(100, 1, ready_only=True, out=out)
    assert tally.sent == 100 and tally.probes == 101
    assert tally.refused and tally.accepted, out.getvalue()
    assert not tally.failures(), out.getvalue()
