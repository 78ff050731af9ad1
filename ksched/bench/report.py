"""What a benchmark leaves behind: ``results.json`` (versioned schema), a Markdown table, a text summary,
and the comparison against a previous ``results.json``.

Schema ``ksched-bench/1`` (fields are only ever added within a version)::

    {"schema": "ksched-bench/1", "ksched": version, "created": ISO time, "machine": {...},
     "workload": {"name", "upstream", "upstreamThreshold", "upstreamSource", "nodes", "measuredPods",
                  "initPods", "source"},
     "runs": [one run: see ksched.bench.driver._measure],
     "summary": {metric: median over runs}}

The summary's metrics are what ``--compare`` compares: ``throughput_average``, ``throughput_p50``,
``throughput_p99`` (higher is better), ``attempt_p99_ms``, ``e2e_p99_ms``,
``scheduler_cpu_s_per_1k_pods`` (lower is better).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import orjson

from ksched import __version__
from ksched.bench.errors import WorkloadError
from ksched.bench.workload import Workload

SCHEMA = "ksched-bench/1"
HIGHER_IS_BETTER = ("throughput_average", "throughput_p50", "throughput_p99")
LOWER_IS_BETTER = ("attempt_p99_ms", "e2e_p99_ms", "scheduler_cpu_s_per_1k_pods")
DEFAULT_TOLERANCE = 0.25
"""A ratio worse than 1/(1+t) (higher-is-better) or 1+t (lower-is-better) is flagged as a regression."""


def summarize_run(run: dict[str, Any]) -> dict[str, float | None]:
    procs = run["processes"]
    parts = [p["cpu_s"] for name, p in procs.items() if name == "scheduler" or name.startswith("bind worker")]
    cpu = None if None in parts else sum(parts)  # the scheduler and its bind worker
    return {
        "throughput_average": run["throughput"]["average"],
        "throughput_p50": run["throughput"]["p50"],
        "throughput_p99": run["throughput"]["p99"],
        "attempt_p99_ms": run["attempt_duration_ms"]["p99_ms"],
        "e2e_p99_ms": run["e2e_latency_ms"]["p99"],
        "scheduler_cpu_s_per_1k_pods": round(1000 * cpu / run["bound"], 3) if cpu and run["bound"] else None,
        "pods_per_second": run["pods_per_second"],
        "bound": run["bound"],
    }


def build(workload: Workload, runs: list[dict[str, Any]]) -> dict[str, Any]:
    per_run = [summarize_run(r) for r in runs]
    summary: dict[str, Any] = {}
    for key in per_run[0]:
        values = [s[key] for s in per_run if s[key] is not None]
        summary[key] = round(statistics.median(values), 3) if values else None
    return {
        "schema": SCHEMA,
        "ksched": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpu_count": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        },
        "workload": {
            "name": workload.name,
            "upstream": workload.upstream,
            "upstreamThreshold": workload.upstream_threshold,
            "upstreamSource": workload.upstream_source,
            "nodes": workload.node_count,
            "initPods": sum(g.count for g in workload.init_pods),
            "measuredPods": workload.measured_count,
            "source": workload.source,
        },
        "runs": runs,
        "summary": summary,
    }


def load_results(path: str | Path) -> dict[str, Any]:
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise WorkloadError(str(path), "", f"cannot read results: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise WorkloadError(str(path), "schema", f"expected {SCHEMA!r}, got {got!r}")
    return data


def write(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "results.json"
    json_path.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    md_path = out_dir / "results.md"
    md_path.write_text(markdown(results))
    return json_path, md_path


def _f(v: Any, digits: int = 1) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def markdown(results: dict[str, Any]) -> str:
    w = results["workload"]
    s = results["summary"]
    thr = w["upstreamThreshold"]
    ratio = f"{s['throughput_average'] / thr:.2f}×" if thr and s["throughput_average"] else "–"
    lines = [
        f"# ksched bench: {w['name']}",
        "",
        f"Upstream counterpart: `{w['upstream']}` ({w['upstreamSource']}); {w['nodes']} nodes, "
        f"{w['initPods']} initial pods, {w['measuredPods']} measured pods; {len(results['runs'])} run(s), "
        f"medians below. Machine: {results['machine']['cpu_count']} CPUs, "
        f"Python {results['machine']['python']}.",
        "",
        "| workload | pods/s avg | p50 | p90 | p99 | attempt p99 ms | e2e p99 ms "
        "| upstream threshold | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    t0 = results["runs"][0]["throughput"]
    lines.append(
        f"| {w['name']} | {_f(s['throughput_average'])} | {_f(s['throughput_p50'])} | {_f(t0['p90'])} | "
        f"{_f(s['throughput_p99'])} | {_f(s['attempt_p99_ms'], 2)} | {_f(s['e2e_p99_ms'])} "
        f"| {_f(thr, 0)} | {ratio} |"
    )
    for i, run in enumerate(results["runs"]):
        lines += ["", f"## Run {i + 1}", ""]
        lines += _run_lines(run)
    return "\n".join(lines) + "\n"


def _gone(run: dict[str, Any]) -> str:
    """How many of the unscheduled pods were deleted while pending (preempted, as upstream allows)."""
    gone = run.get("deleted_before_bound") or 0
    return f" ({gone} of them deleted while pending, e.g. preempted)" if gone else ""


def _requeue_line(run: dict[str, Any]) -> str:
    """What requeueing costs: attempts per scheduled pod, FailedScheduling Event writes per second."""
    per_pod = run.get("attempts_per_scheduled_pod")
    writes = run.get("failed_scheduling_writes", 0)
    rate = writes / run["seconds"] if run["seconds"] else 0.0
    return (
        f"- attempts per scheduled pod {_f(per_pod, 3)}; FailedScheduling event writes {writes} "
        f"({rate:,.1f}/s)"
    )


def _run_lines(run: dict[str, Any]) -> list[str]:
    a, e, t = run["attempt_duration_ms"], run["e2e_latency_ms"], run["throughput"]
    lines = [
        f"- bound {run['bound']}/{run['measured_pods']} measured pods in {run['seconds']:.2f} s "
        f"({run['pods_per_second']:,.0f} pods/s overall); unscheduled {run['unscheduled']}"
        f"{_gone(run)}, bound twice {run['double_bindings']}",
        f"- SchedulingThroughput pods/s: average {t['average']:,.1f}, p50 {t['p50']:,.1f}, "
        f"p90 {t['p90']:,.1f}, "
        f"p95 {t['p95']:,.1f}, p99 {t['p99']:,.1f} ({len(t['samples'])} one-second samples)",
        f"- scheduling attempt (scheduled) ms: p50 {a['p50_ms']:.2f}, p90 {a['p90_ms']:.2f}, "
        f"p99 {a['p99_ms']:.2f} "
        f"({a['count']:.0f} attempts); attempts by result: "
        + ", ".join(f"{k} {v:.0f}" for k, v in run["attempts"].items()),
        f"- end to end (created → bound) ms: p50 {e['p50']:,.1f}, p90 {e['p90']:,.1f}, p99 {e['p99']:,.1f}, "
        f"max {e['max']:,.1f}",
        _requeue_line(run),
    ]
    for name, p in run["processes"].items():
        lines.append(
            f"- {name} process: {_f(p['cpu_s'], 2)} CPU s while measuring "
            f"({_f(p['cpu_s_total'], 2)} s in all), "
            f"peak RSS {_f(p['peak_rss_mb'])} MB"
        )
    pinned = run.get("pinned")
    if pinned:
        lines.append(
            f"- pinned (--pin): scheduler on CPU {pinned['scheduler']}, "
            f"embedded cluster and driver on CPU {pinned['sim_and_driver']}"
        )
    if run["quality"]:
        lines.append("- placement: " + ", ".join(f"{k} {v}" for k, v in run["quality"].items()))
    if run["preemption"]["attempts"] or run["churn_objects"]:
        lines.append(
            f"- churn objects created {run['churn_objects']}; preemption attempts "
            f"{run['preemption']['attempts']:.0f}, victims {run['preemption']['victims']:.0f}"
        )
    ext = run.get("extenders")
    if ext:
        share = ext["share_of_attempts"]
        lines.append(
            "- extender requests: "
            + ", ".join(
                f"{verb} {v['calls']:.0f} calls, mean {v['mean_ms']:.2f} ms, {v['errors']:.0f} errors"
                for verb, v in ext["verbs"].items()
            )
            + (f"; {100 * share:.1f}% of the scheduling attempts' time" if share is not None else "")
        )
    tables = (
        ("extension point (every cycle)", "extension_points"),
        ("plugin / extension point (one cycle in ten)", "plugins"),
    )
    for title, key in tables:
        table = run[key]
        lines += [
            "",
            f"| {title} | count | mean ms | p50 ms | p99 ms | total s |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        if not table:
            lines.append("| (not exposed by this scheduler) | | | | | |")
        for name, h in table.items():
            lines.append(
                f"| {name} | {h['count']:.0f} | {h['mean_ms']:.4f} | {h['p50_ms']:.4f} | {h['p99_ms']:.4f} "
                f"| {h['total_s']:.4f} |"
            )
    prof = run.get("profile")
    if prof and prof.get("path"):
        lines += [
            "",
            f"Profile of the scheduling thread: `{prof['path']}` (`python -m pstats {prof['path']}`).",
        ]
    return lines


def text(results: dict[str, Any]) -> str:
    """What the command prints: the Markdown of the last run, without its headings' noise."""
    return markdown(results)


def profile_text(run: dict[str, Any], n: int = 15) -> str:
    prof = run.get("profile")
    if not prof:
        return ""
    if not prof.get("path"):
        return f"profile: not taken ({prof.get('error')})"
    lines = [f"profile: {prof['path']} ({prof['total_s']:.2f} s of scheduling-thread time)"]
    for title, key in (("cumulative", "by_cumulative"), ("own time", "by_own")):
        lines.append(f"top {n} by {title}:")
        lines.append(f"  {'cumulative s':>12} {'own s':>9} {'calls':>9}  function")
        for r in prof[key][:n]:
            lines.append(f"  {r['cumulative_s']:>12.3f} {r['own_s']:>9.3f} {r['calls']:>9}  {r['function']}")
    return "\n".join(lines)


def compare(
    new: dict[str, Any], old: dict[str, Any], tolerance: float = DEFAULT_TOLERANCE
) -> tuple[str, bool]:
    """A table of new/old ratios per summary metric; True when any metric regressed beyond ``tolerance``."""
    rows = [
        f"compare {new['workload']['name']} against {old['workload']['name']} ({old.get('created', '?')}):",
        f"  {'metric':<28} {'previous':>12} {'now':>12} {'ratio':>8}",
    ]
    if (
        new["workload"]["name"] != old["workload"]["name"]
        or new["workload"]["nodes"] != old["workload"]["nodes"]
    ):
        rows.append("  note: different workloads or sizes; the ratios compare unlike runs")
    regressed = False
    for key in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER):
        a, b = old["summary"].get(key), new["summary"].get(key)
        if not a or b is None:
            rows.append(f"  {key:<28} {_f(a):>12} {_f(b):>12} {'–':>8}")
            continue
        ratio = b / a
        bad = ratio < 1 / (1 + tolerance) if key in HIGHER_IS_BETTER else ratio > 1 + tolerance
        regressed |= bad
        flag = "  REGRESSION" if bad else ""
        rows.append(f"  {key:<28} {_f(float(a)):>12} {_f(float(b)):>12} {ratio:>7.2f}×{flag}")
    verdict = "REGRESSION beyond" if regressed else "no regression beyond"
    rows.append(f"  {verdict} {tolerance:.0%}")
    return "\n".join(rows), regressed
