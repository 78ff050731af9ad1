"""The benchmark's two ways to fail, both under :class:`~ksched.errors.KschedError` (exit status 2)."""

from __future__ import annotations

from ksched.errors import InputError, KschedError


class WorkloadError(InputError):
    """A workload file (or a results file given to ``--compare``) is not valid; names file and field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        super().__init__(f"{source}: {field}: {problem}" if field else f"{source}: {problem}")


class BenchError(KschedError):
    """A benchmark run could not be carried out (a child process did not start, died or stalled)."""
