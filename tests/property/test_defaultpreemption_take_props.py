"""DefaultPreemption's collection of dry-run outcomes (``plugin._take``) against upstream's loop.

Over random sequences of chunks (nodes that are not candidates, with plain or error statuses;
candidates with and without PDB violations) and any ``want`` (0 too): the same candidates in the
same two lists, the same statuses and errors, and the same chunk at which the dry run stops.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.interface import Code, Status
from ksched.framework.plugins.defaultpreemption.pick import Candidate
from ksched.framework.plugins.defaultpreemption.plugin import ChunkOutcome, _take

node_st = st.one_of(
    st.just(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no",))),
    st.just(Status(Code.ERROR, ("boom",))),
    st.integers(0, 2),  # a candidate with this many violations
)


def _reference(
    out: ChunkOutcome,
    want: int,
    good: list[Candidate],
    violating: list[Candidate],
    statuses: list[Status],
    errors: list[str],
) -> bool:
    """The loop ``_dry_run`` ran before: upstream's, node by node."""
    for name, status, victims, num_violations in zip(
        out.names, out.status, out.victims, out.violations, strict=True
    ):
        if status is not None:
            statuses.append(status)
            if status.code == Code.ERROR:
                errors.append(status.message)
            continue
        cand = Candidate(name, victims, num_violations)
        target = good if num_violations == 0 else violating
        if len(target) < want:
            target.append(cand)
        if good and len(good) + len(violating) >= want:
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(chunks=st.lists(st.lists(node_st, max_size=12), max_size=4), want=st.integers(0, 6))
def test_take_is_upstreams_loop(chunks: list[list[Status | int]], want: int) -> None:
    got: tuple[list[Candidate], list[Candidate], list[Status], list[str]] = ([], [], [], [])
    ref: tuple[list[Candidate], list[Candidate], list[Status], list[str]] = ([], [], [], [])
    for c, nodes in enumerate(chunks):
        names = [f"c{c}n{j}" for j in range(len(nodes))]
        status = [x if isinstance(x, Status) else None for x in nodes]
        violations = [x if isinstance(x, int) else 0 for x in nodes]
        out = ChunkOutcome(names, status, [()] * len(nodes), violations)
        stop = _take(out, want, *got)
        assert stop == _reference(out, want, *ref)
        assert got == ref
        if stop:
            break
