"""The picture: throughput over time and the end-to-end latency CDF, one PNG per results.json.

matplotlib is the optional extra ``plot`` (``pip install 'ksched[plot]'``); without it the bench still
writes its JSON and Markdown and says the chart was skipped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write(results: dict[str, Any], path: Path) -> Path | None:
    """Write the chart; None when matplotlib is not installed."""
    if not available():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    name = results["workload"]["name"]
    threshold = results["workload"].get("upstreamThreshold")
    for i, run in enumerate(results["runs"]):
        samples = run["throughput"]["samples"]
        ax1.plot(range(1, len(samples) + 1), samples, marker=".", label=f"run {i + 1}")
        cdf = run["e2e_latency_cdf_ms"]
        if cdf:
            ax2.plot(cdf, [k / (len(cdf) - 1) for k in range(len(cdf))], label=f"run {i + 1}")
    if threshold:
        ax1.axhline(threshold, color="grey", linestyle="--", label=f"upstream threshold {threshold:.0f}")
    ax1.set_title(f"{name}: scheduling throughput")
    ax1.set_xlabel("second of the measured phase")
    ax1.set_ylabel("pods/s")
    ax1.set_ylim(bottom=0)
    ax1.legend()
    ax2.set_title(f"{name}: created → bound latency (CDF)")
    ax2.set_xlabel("ms")
    ax2.set_ylabel("fraction of pods")
    ax2.set_ylim(0, 1)
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
