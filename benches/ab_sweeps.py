"""Interleaved A/B of the default shape's sweeps: ``python -m benches.ab_sweeps [--sizes ...]``.

``fused_pass`` has several sweeps for the default profile's shape (``kernels.pyx``: ``SWEEPS``):
the generic loop every other shape takes, the hand-unrolled scalar loop, and the vector sweeps
this CPU runs. Each stays only while it wins clearly over the generic one on the cycle, so this
times three things per sweep, on the seeded clusters of ``test_micro_cycle.py``: the kernel alone
(``fused_pass`` with the default pod's spec), a cycle of the resource-only profile, and a cycle of
the default profile.

pytest-benchmark runs one row after another, so a machine whose speed drifts (shared cores,
frequency changes) shows up as a difference between rows. Here the sweeps alternate instead: run
``i`` times a batch of calls for each sweep in turn (in reverse order on odd runs), and the
figures are the median of the batch medians and the median of each run's ratio to the generic
sweep's batch next to it. Prints one line per (size, target, sweep) and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from types import ModuleType

import numpy as np

from benches.test_cycle import default_framework, reduced_framework
from benches.test_micro_cycle import build_cluster, incoming
from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels
from ksched.framework.plugins.noderesources import scoring

I64 = np.int64


def _batch_median_us(fn: Callable[[], object], calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000.0


def _targets(fast: ModuleType, cluster: ClusterCache) -> dict[str, Callable[[], object]]:
    """The kernel alone and the two profiles' cycles, for the default pod (cpu and memory)."""
    pod = incoming("plain")
    cols = np.array([0, 1], dtype=I64)
    empty = np.zeros(0, dtype=I64)
    request = np.array([pod.requests.get("cpu", 0), pod.requests.get("memory", 0)], dtype=I64)
    nonzero = np.array([pod.nonzero_cpu, pod.nonzero_memory], dtype=I64)
    src = np.array([kernels.SRC_NONZERO_CPU, kernels.SRC_NONZERO_MEMORY], dtype=I64)
    spec = scoring.pack_spec(True, cols, request, True, cols, src, nonzero, np.ones(2, dtype=I64),
                             kernels.LEAST_ALLOCATED, empty, empty, True, cols, request)  # fmt: skip
    nodes = cluster.nodes
    table = (nodes.allocatable, nodes.requested, nodes.nonzero_requested, nodes.allowed_pods)
    args = (*table, nodes.pod_count, nodes.valid, nodes.n_rows, spec, 1, 1)
    reduced, default = reduced_framework(), default_framework()
    return {
        "kernel": lambda: fast.fused_pass(*args),
        "cycle-reduced": lambda: reduced.schedule_pod(pod, cluster),
        "cycle-default": lambda: default.schedule_pod(pod, cluster),
    }


def ab(
    fast: ModuleType, fn: Callable[[], object], sweeps: list[str], runs: int, calls: int
) -> dict[str, list[float]]:
    """Batch medians (µs) per sweep over ``runs`` interleaved runs."""
    out: dict[str, list[float]] = {s: [] for s in sweeps}
    previous = fast.simd_level()
    try:
        for sweep in sweeps:  # warm up every path
            fast.set_simd(sweep)
            fn()
        for i in range(runs):
            for sweep in sweeps if i % 2 == 0 else sweeps[::-1]:
                fast.set_simd(sweep)
                out[sweep].append(_batch_median_us(fn, calls))
    finally:
        fast.set_simd(previous)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000", help="node counts, comma-separated")
    parser.add_argument("--sweeps", default="", help="comma-separated; default: every sweep this CPU runs")
    parser.add_argument("--runs", type=int, default=11, help="interleaved runs per sweep")
    parser.add_argument("--calls", type=int, default=200, help="calls per batch")
    opts = parser.parse_args()
    fast = kernels.compiled()
    if fast is None:
        raise SystemExit("the compiled kernels are not built (python setup.py build_ext --inplace)")
    sweeps = opts.sweeps.split(",") if opts.sweeps else list(fast.sweeps())
    print(f"sweeps this CPU runs: {fast.sweeps()}; comparing {sweeps} against {sweeps[0]}")
    for n in (int(s) for s in opts.sizes.split(",")):
        for target, fn in _targets(fast, build_cluster(n)).items():
            times = ab(fast, fn, sweeps, opts.runs, opts.calls)
            base = times[sweeps[0]]
            for sweep in sweeps:
                ratios = [b / a for a, b in zip(base, times[sweep], strict=True)]
                print(
                    f"n={n:<6} {target:14} {sweep:8} median {statistics.median(times[sweep]):8.1f} µs"
                    f"  paired ratio {statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]"
                    f"  runs {len(ratios)}",
                    flush=True,
                )
    print("load average:", os.getloadavg() if hasattr(os, "getloadavg") else "unknown")


if __name__ == "__main__":
    main()
