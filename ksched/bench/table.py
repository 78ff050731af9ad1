"""The figures table of ``benches/README.md``, rendered from saved results.

``python -m ksched.bench.table [--readme benches/README.md] FILE...`` reads each ``FILE`` (a
``ksched bench`` ``results.json``, a directory holding one, or a pytest-benchmark JSON written with
``--benchmark-json``, or a ``ksched bench --sweep`` ``sweep.json``) and renders one Markdown table: a
row per workload (its ``summary``: medians over runs), a row per size of a sweep and a row per
microbenchmark (its median). With ``--readme`` the table replaces what
lies between the :data:`BEGIN` and :data:`END` marker lines of that file; without it, the table is
printed. Rows keep the order of the files given, so the command that made a table is the one that
remakes it.

Every row says on what machine its figure was taken (the CPU count and the load average when it
started), because figures from different machines or a busy one do not compare; when the table was
made is in the history of the file, not in the table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ksched.bench.errors import WorkloadError
from ksched.bench.report import SCHEMA, load_results
from ksched.bench.sweep import SCHEMA as SWEEP_SCHEMA

BEGIN = "<!-- figures:begin (python -m ksched.bench.table regenerates this table) -->"
END = "<!-- figures:end -->"
HEADER = (
    "| what | figure | upstream | machine |",
    "| --- | ---: | ---: | --- |",
)


def _read(path: Path) -> dict[str, Any]:
    if path.is_dir():
        path = path / "results.json"
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise WorkloadError(str(path), "", f"cannot read results: {exc}") from exc
    if isinstance(data, dict) and data.get("schema") == SCHEMA:
        return load_results(path)
    if isinstance(data, dict) and data.get("schema") == SWEEP_SCHEMA:
        return data
    if isinstance(data, dict) and isinstance(data.get("benchmarks"), list):
        return data
    raise WorkloadError(
        str(path), "", f"neither a {SCHEMA!r} results.json, a sweep.json nor a pytest-benchmark JSON"
    )


def _n(v: float | None, digits: int = 0) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def duration(seconds: float) -> str:
    """A duration with three significant figures in the unit that suits it (ns, µs, ms, s)."""
    unit, scale = next(
        ((u, s) for u, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)) if seconds >= s), ("ns", 1e-9)
    )
    value = seconds / scale
    digits = 0 if value >= 100 else (1 if value >= 10 else 2)
    return f"{value:,.{digits}f} {unit}"


def workload_row(results: dict[str, Any]) -> str:
    """One row for a ``ksched bench`` result: SchedulingThroughput and the figures beside it."""
    w, s, m = results["workload"], results["summary"], results["machine"]
    runs = len(results["runs"])
    what = f"`ksched bench {w['name']}`: {w['nodes']:,} nodes, {w['measuredPods']:,} measured pods"
    pinned = any(r.get("pinned") for r in results["runs"])
    figure = (
        f"{_n(s['throughput_average'])} pods/s (p50 {_n(s['throughput_p50'])}, p99 "
        f"{_n(s['throughput_p99'])}); e2e p99 {_n(s['e2e_p99_ms'])} ms; "
        f"{_n(s['scheduler_cpu_s_per_1k_pods'], 2)} CPU s / 1,000 pods"
    )
    thr = w.get("upstreamThreshold")
    upstream = "–"
    if thr:
        ratio = f" ({s['throughput_average'] / thr:.1f}×)" if s["throughput_average"] else ""
        upstream = f"{thr:,.0f}{ratio}"
    load = m.get("load_average")
    taken = (
        f"{m.get('cpu_count')} CPUs"
        + (", pinned" if pinned else "")
        + (f", load {load[0]:.1f}" if load else "")
        + f", median of {runs}"
    )
    return f"| {what} | {figure} | {upstream} | {taken} |"


def sweep_rows(data: dict[str, Any]) -> list[str]:
    """One row per size of a ``ksched bench --sweep``: the point's medians."""
    m = data.get("machine") or {}
    load = m.get("load_average")
    rows = []
    for p in data["points"]:
        what = (
            f"`ksched bench {data['workload']} --sweep`: {p['nodes']:,} nodes, "
            f"{p['measuredPods']:,} measured pods"
        )
        startup = p.get("startup_to_first_bind_s")
        figure = (
            f"{_n(p['throughput_average'])} pods/s (p50 {_n(p['throughput_p50'])}); "
            f"{_n(p['scheduler_cpu_ms_per_pod'], 3)} CPU ms / pod; "
            f"peak RSS {_n(p['scheduler_peak_rss_mb'])} MB; cycle mean {_n(p['cycle_mean_ms'], 3)} ms"
            + (f"; first bind {startup:.2f} s" if startup is not None else "")
        )
        cpus = f"{m.get('cpu_count')} CPUs" + (f", load {load[0]:.1f}" if load else "")
        taken = f"{cpus}, median of {p['runs']}"
        rows.append(f"| {what} | {figure} | – | {taken} |")
    return rows


def microbenchmark_rows(data: dict[str, Any]) -> list[str]:
    """One row per benchmark of a pytest-benchmark JSON: its median."""
    info = data.get("machine_info") or {}
    ours = info.get("ksched") or {}  # what benches/conftest.py records
    cpus = ours.get("cpu_count") or (info.get("cpu") or {}).get("count")
    load = ours.get("load_average")
    parts = ([f"{cpus} CPUs"] if cpus else []) + ([f"load {load[0]:.1f}"] if load else [])
    taken = ", ".join(parts) or "–"
    rows = []
    for b in data["benchmarks"]:
        group = f"{b['group']}: " if b.get("group") else ""
        where = b.get("fullname", "").split("::")[0]
        what = f"{group}`{b['name']}`" + (f" ({where})" if where else "")
        rows.append(f"| {what} | {duration(b['stats']['median'])} median | – | {taken} |")
    return rows


def render(paths: Sequence[Path]) -> str:
    """The Markdown table for ``paths``, in their order."""
    lines = list(HEADER)
    for path in paths:
        data = _read(path)
        if data.get("schema") == SCHEMA:
            lines.append(workload_row(data))
        elif data.get("schema") == SWEEP_SCHEMA:
            lines.extend(sweep_rows(data))
        else:
            lines.extend(microbenchmark_rows(data))
    return "\n".join(lines) + "\n"


def replace_between_markers(text: str, table: str, where: str = "README") -> str:
    """``text`` with the lines between :data:`BEGIN` and :data:`END` replaced by ``table``."""
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == BEGIN)
        end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == END)
    except StopIteration:
        raise WorkloadError(where, "", f"needs the marker lines {BEGIN!r} and {END!r}") from None
    return "".join(lines[: start + 1]) + table + "".join(lines[end:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ksched.bench.table",
        description="Render the figures table from ksched bench results.json files (or their "
        "directories), ksched bench --sweep sweep.json files and pytest-benchmark JSON files, in the "
        "order given.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument(
        "--readme", type=Path, help="write the table between the figures markers of this file instead"
    )
    args = parser.parse_args(argv)
    try:
        table = render(args.files)
        if args.readme is None:
            sys.stdout.write(table)
            return 0
        text = args.readme.read_text()
        args.readme.write_text(replace_between_markers(text, table, str(args.readme)))
    except (WorkloadError, OSError) as exc:
        print(f"ksched.bench.table: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the figures table of {args.readme} ({len(table.splitlines()) - 2} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
