"""``ksched bench WORKLOAD --sweep nodes=A,B,...``: the same workload at several cluster sizes, and the curve.

Each size runs exactly as ``ksched bench WORKLOAD --nodes N`` does (``--repeat`` runs, fresh processes,
its own ``results.json`` under ``nodes-N/``), so a point of the curve is a plain bench result. The curve
itself is ``sweep.json`` (schema ``ksched-sweep/1``), a Markdown table and, with the ``plot`` extra,
``sweep.png``::

    {"schema": "ksched-sweep/1", "ksched": version, "created": ISO time, "machine": {...},
     "workload": name, "parameter": "nodes",
     "points": [{"nodes", "measuredPods", "runs", "throughput_average", "throughput_p50",
                 "scheduler_cpu_ms_per_pod", "scheduler_peak_rss_mb", "startup_to_first_bind_s",
                 "cycle_mean_ms", "results"}]}

Every figure of a point is the median over its runs; ``cycle_mean_ms`` is the mean of
``scheduler_scheduling_algorithm_duration_seconds`` (filtering and scoring the nodes);
``startup_to_first_bind_s`` is null while the bench does not record it.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ksched import __version__
from ksched.bench import report
from ksched.bench.errors import WorkloadError
from ksched.bench.workload import Workload

SCHEMA = "ksched-sweep/1"
PARAMETERS = ("nodes",)


def parse(spec: str) -> list[int]:
    """``nodes=5000,15000`` -> [5000, 15000]: sizes in the order given, each a positive integer."""
    name, sep, values = spec.partition("=")
    if not sep or name.strip() not in PARAMETERS:
        raise WorkloadError("--sweep", "", f"expected nodes=N,N,..., got {spec!r}")
    try:
        sizes = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise WorkloadError("--sweep", "", f"sizes must be integers, got {values!r}") from None
    if not sizes or min(sizes) <= 0:
        raise WorkloadError("--sweep", "", f"expected at least one positive size, got {values!r}")
    return sizes


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def point(results: dict[str, Any], results_path: Path) -> dict[str, Any]:
    """One point of the curve from one size's bench results: medians over its runs."""
    runs, summary = results["runs"], results["summary"]
    rss = [r["processes"].get("scheduler", {}).get("peak_rss_mb") for r in runs]
    # The scheduling algorithm (filter and score over the nodes): the part that grows with the cluster;
    # a whole attempt also waits for its bind.
    cycle = [(r.get("algorithm_duration_ms") or {}).get("mean_ms") for r in runs]
    startup = [r.get("startup_to_first_bind_s") for r in runs]
    return {
        "nodes": results["workload"]["nodes"],
        "measuredPods": results["workload"]["measuredPods"],
        "runs": len(runs),
        "throughput_average": summary["throughput_average"],
        "throughput_p50": summary["throughput_p50"],
        # CPU seconds per 1,000 pods is CPU milliseconds per pod.
        "scheduler_cpu_ms_per_pod": summary["scheduler_cpu_s_per_1k_pods"],
        "scheduler_peak_rss_mb": _median(rss),
        "startup_to_first_bind_s": _median(startup),
        "cycle_mean_ms": _median(cycle),
        "results": str(results_path),
    }


def build(name: str, points: list[dict[str, Any]], machine: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "ksched": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine,
        "workload": name,
        "parameter": "nodes",
        "points": points,
    }


def load(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise WorkloadError(str(path), "", f"cannot read sweep: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise WorkloadError(str(path), "schema", f"expected {SCHEMA!r}")
    return data


def _f(v: Any, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def markdown(sweep: dict[str, Any]) -> str:
    """The curve as a table, one row per size."""
    lines = [
        f"# ksched bench: {sweep['workload']} against cluster size (medians per size)",
        "",
        "| nodes | measured pods | pods/s avg | pods/s p50 | scheduler CPU ms/pod | scheduler peak RSS MB "
        "| start-up to first bind s | cycle mean ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in sweep["points"]:
        lines.append(
            f"| {p['nodes']:,} | {p['measuredPods']:,} | {_f(p['throughput_average'])} "
            f"| {_f(p['throughput_p50'])} | {_f(p['scheduler_cpu_ms_per_pod'], 3)} "
            f"| {_f(p['scheduler_peak_rss_mb'])} | {_f(p['startup_to_first_bind_s'], 2)} "
            f"| {_f(p['cycle_mean_ms'], 3)} |"
        )
    return "\n".join(lines) + "\n"


def chart(sweep: dict[str, Any], path: Path) -> Path | None:
    """pods/s and CPU per pod against nodes; None when matplotlib (the ``plot`` extra) is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sweep["points"]
    nodes = [p["nodes"] for p in pts]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    ax1.plot(nodes, [p["throughput_average"] for p in pts], marker="o", label="average")
    ax1.plot(nodes, [p["throughput_p50"] for p in pts], marker=".", label="p50")
    ax1.set_title(f"{sweep['workload']}: scheduling throughput")
    ax1.set_ylabel("pods/s")
    ax2.plot(nodes, [p["scheduler_cpu_ms_per_pod"] for p in pts], marker="o")
    ax2.set_title(f"{sweep['workload']}: scheduler CPU per pod (all its processes)")
    ax2.set_ylabel("CPU ms per pod")
    for ax in (ax1, ax2):
        ax.set_xlabel("nodes")
        ax.set_ylim(bottom=0)
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run(base: Workload, sizes: Sequence[int], pods: int | None, opts: Any, repeat: int, out: Path) -> int:
    """Run ``base`` at every size (``opts``: the driver's BenchOptions), then write and print the curve."""
    from dataclasses import replace

    from ksched.bench.driver import run_repeatedly

    points = []
    machine: dict[str, Any] = {}
    for nodes in sizes:
        w = base.scaled(nodes=nodes, pods=pods)
        size_dir = out / f"nodes-{nodes}"
        size_opts = replace(opts, out_dir=size_dir)
        heading = f"ksched bench --sweep: {w.name} at {nodes} nodes"
        detail = f"{sum(g.count for g in w.init_pods)} initial pods, {w.measured_count} measured pods"
        runs = run_repeatedly(w, size_opts, size_dir, repeat, heading, detail)
        results = report.build(w, runs)
        machine = machine or results["machine"]
        json_path, _ = report.write(results, size_dir)
        points.append(point(results, json_path))
    sweep = build(base.name, points, machine)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_bytes(orjson.dumps(sweep, option=orjson.OPT_INDENT_2))
    text = markdown(sweep)
    (out / "sweep.md").write_text(text)
    print(text)
    png = chart(sweep, out / "sweep.png")
    print(f"wrote {out / 'sweep.json'}, {out / 'sweep.md'}" + (f", {png}" if png else ""))
    if png is None:
        print("chart skipped: matplotlib is not installed (pip install 'ksched[plot]')")
    return 0
