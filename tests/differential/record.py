"""Regenerate the differential test's golden recordings, for when a decision change is intended.

    PYTHONPATH=. python -m tests.differential.record            # every size
    PYTHONPATH=. python -m tests.differential.record small      # one size

Each size is replayed twice and written only if both replays are the same bytes (a
nondeterministic scheduler would otherwise produce a golden no later run can match). Review the
change with the printed summary and the test's diff before committing it.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.differential.recording import summary_table
from tests.differential.replay import golden_path, replay
from tests.differential.workload import SIZES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.differential.record", description=__doc__.split("\n")[0]
    )
    parser.add_argument("sizes", nargs="*", metavar="SIZE", help=f"any of {', '.join(SIZES)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size {unknown[0]!r}: choose from {', '.join(SIZES)}")
    for size in args.sizes or list(SIZES):
        started = time.perf_counter()
        first = replay(size)
        seconds = time.perf_counter() - started
        data = first.to_bytes()
        if replay(size).to_bytes() != data:
            print(
                f"{size}: two replays differ; the run is not deterministic, golden not written",
                file=sys.stderr,
            )
            return 1
        path = golden_path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{size}: {SIZES[size].nodes} nodes, replayed in {seconds:.1f} s, {len(data)} bytes -> {path}")
        print(summary_table(first.summary()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
