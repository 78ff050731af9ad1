"""The informer's replay filter: after a paginated list, the watch starts at the first page's
resourceVersion and replays changes that later pages already showed; replayed states older than
what was delivered are dropped so no object steps back in time, deletions always pass."""

from __future__ import annotations

from ksched.kube.informer import _note_newer, _stale_replay


def meta(name: str, rv: int) -> dict[str, str]:
    return {"namespace": "default", "name": name, "resourceVersion": str(rv)}


def test_replayed_older_states_are_dropped_and_newer_ones_pass() -> None:
    newer: dict[str, int] = {}
    _note_newer([{"metadata": meta("a", 110)}, {"metadata": meta("b", 90)}], "100", newer)
    assert newer == {"default/a": 110}  # b was not newer than the list
    assert _stale_replay(newer, "ADDED", meta("a", 105), "105")  # older than delivered: drop
    assert not _stale_replay(newer, "MODIFIED", meta("c", 106), "106")  # other objects pass
    assert not _stale_replay(newer, "DELETED", meta("a", 108), "108")  # deletions always pass
    assert not _stale_replay(newer, "MODIFIED", meta("a", 112), "112")  # past the window
    assert newer == {}


def test_opaque_resource_versions_disable_the_filter() -> None:
    newer = {"default/a": 110}
    assert not _stale_replay(newer, "ADDED", meta("a", 105), "not-a-number")
    assert newer == {}
