"""The write audit: bounded, read from a sequence number on, clients told apart without credentials."""

from __future__ import annotations

from ksched.sim._clock import FixedClock
from ksched.sim.writes import WriteAudit, credential_digest


def test_the_newest_records_are_kept_and_the_dropped_counted() -> None:
    audit = WriteAudit(FixedClock(), limit=3)
    for i in range(5):
        audit.record("POST", f"/p/{i}", "ksched/0.1.0 (a)", "", 201)
    assert [r.seq for r in audit.records()] == [3, 4, 5]
    assert [r.path for r in audit.records(since_seq=4)] == ["/p/4"]
    assert audit.records(since_seq=9) == []
    assert audit.dropped == 2
    audit.clear()
    assert audit.records() == [] and audit.dropped == 0


def test_records_name_the_client_and_when_handling_began() -> None:
    clock = FixedClock(100.0)
    audit = WriteAudit(clock)
    clock.advance(0.25)
    rec = audit.record("PUT", "/lease", "ksched/0.1.0 (b) leader-election", "Bearer t", 200, received=100.0)
    assert (rec.timestamp, rec.received) == (100.25, 100.0)
    assert rec.credential == credential_digest("Bearer t") and len(rec.credential) == 12
    assert rec.reached_store
    cut = audit.record("PUT", "/lease", "ksched/0.1.0 (b) leader-election", "", 0, "partition-blackhole")
    assert not cut.reached_store and cut.credential == ""
    assert [r.seq for r in audit.by_agent("(b)")] == [1, 2] and audit.by_agent("(c)") == []
