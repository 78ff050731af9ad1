"""``ksched bench WORKLOAD [--nodes N | --sweep nodes=A,B,...] [--pods N] [--repeat K] [--out DIR] [--profile]
[--compare PREV]``.

Kept import-light: building the ``ksched`` parser imports this module, so everything heavy is imported
inside :func:`run_bench`. ``WORKLOAD`` may also be an existing ``results.json``: with ``--compare`` that
compares two results without running anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_REGRESSION = 1


def add_bench_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "bench",
        help="run a scheduler_perf-shaped workload against the embedded cluster and report like upstream",
        description="Start the embedded cluster and the scheduler in separate processes, build the "
        "workload's initial state, measure the measured pods; write results.json, results.md and a chart.",
    )
    p.add_argument(
        "workload",
        nargs="?",
        help="a name in benches/workloads (e.g. SchedulingBasic), a YAML path, "
        "or a results.json to --compare without running",
    )
    p.add_argument(
        "--nodes", type=int, help="total nodes (default: the workload's, 5000 for the shipped ones)"
    )
    p.add_argument(
        "--sweep",
        metavar="nodes=A,B,...",
        help="run the workload once per cluster size (each with --repeat runs) and write the curve: "
        "sweep.json, sweep.md and sweep.png in --out",
    )
    p.add_argument("--pods", type=int, help="total measured pods (default: the workload's)")
    p.add_argument("--repeat", type=int, default=1, help="runs, each in fresh processes (default 1)")
    p.add_argument("--out", type=Path, help="output directory (default bench-out/<workload>)")
    p.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the scheduling thread while measuring; print the top functions",
    )
    p.add_argument(
        "--compare", type=Path, metavar="PREVIOUS.json", help="print ratios against a previous run"
    )
    p.add_argument(
        "--tolerance", type=float, default=None, help="regression threshold for --compare (default 0.25)"
    )
    p.add_argument(
        "--stall-seconds",
        type=float,
        default=30.0,
        help="end measuring when nothing was bound for this long (default 30)",
    )
    p.add_argument(
        "--config",
        help="KubeSchedulerConfiguration for the scheduler process (default: upstream's, with "
        "clientConnection qps/burst lifted: keep them high in yours, or binds are capped at 50/s)",
    )
    p.add_argument(
        "--start-pods",
        action="store_true",
        help="let the cluster's kubelet stand-in turn bound pods Running (default: they stay Pending, "
        "as in upstream's scheduler_perf, which has no kubelets)",
    )
    p.add_argument(
        "--pin",
        action="store_true",
        help="run the scheduler on one CPU of its own and the embedded cluster and the driver on the "
        "others (Linux, 2+ CPUs); default: all three share every CPU",
    )
    p.add_argument(
        "--extender",
        metavar="VERBS",
        help="run examples/extender/server.py on loopback and configure the scheduler with it: "
        "filter,prioritize[,nodecache] (it passes and scores every node alike); reports its share "
        "of the scheduling attempts",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list", action="store_true", help="list the shipped workloads and exit")
    return p


def run_bench(args: argparse.Namespace) -> int:

    from ksched.bench import chart, report, sweep, workload
    from ksched.bench.driver import BenchOptions, run_repeatedly
    from ksched.bench.extender import parse_verbs

    tolerance = report.DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    if args.list:
        for name in workload.available():
            w = workload.load(name)
            thr = f"threshold {w.upstream_threshold:.0f} pods/s" if w.upstream_threshold else "no threshold"
            print(f"{name:<34} {w.upstream} ({thr})")
        return EXIT_OK
    if not args.workload:
        print("ksched bench: name a workload (--list shows them)")
        return 2
    if args.workload.endswith(".json") and Path(args.workload).exists():
        if args.compare is None:
            print(report.markdown(report.load_results(args.workload)))
            return EXIT_OK
        text, regressed = report.compare(
            report.load_results(args.workload), report.load_results(args.compare), tolerance
        )
        print(text)
        return EXIT_REGRESSION if regressed else EXIT_OK
    if args.sweep and (args.nodes is not None or args.compare is not None):
        print("ksched bench: --sweep sets the node counts itself and takes neither --nodes nor --compare")
        return 2
    sizes = sweep.parse(args.sweep) if args.sweep else None  # fail before a long run
    previous = report.load_results(args.compare) if args.compare else None
    w = workload.load(args.workload).scaled(nodes=args.nodes, pods=args.pods)
    out = args.out or Path("bench-out") / (w.name + ("-sweep" if sizes else ""))
    opts = BenchOptions(
        out_dir=out,
        profile=args.profile,
        stall_s=args.stall_seconds,
        config_path=args.config,
        verbosity=args.verbosity,
        progress=not args.no_progress,
        start_pods=args.start_pods,
        pin=args.pin,
        extender=parse_verbs(args.extender) if args.extender else (),
    )
    if sizes is not None:
        return sweep.run(workload.load(args.workload), sizes, args.pods, opts, args.repeat, out)
    init = sum(g.count for g in w.init_pods)
    detail = f"{w.node_count} nodes, {init} initial pods, {w.measured_count} measured pods"
    runs = run_repeatedly(w, opts, out, args.repeat, f"ksched bench: {w.name}", detail)
    results = report.build(w, runs)
    json_path, md_path = report.write(results, out)
    print(report.markdown(results))
    for run in runs:
        if run.get("profile"):
            print(report.profile_text(run))
    png = chart.write(results, out / "results.png")
    print(f"wrote {json_path}, {md_path}" + (f", {png}" if png else ""))
    if png is None:
        print("chart skipped: matplotlib is not installed (pip install 'ksched[plot]')")
    if previous is not None:
        text, regressed = report.compare(results, previous, tolerance)
        print(text)
        return EXIT_REGRESSION if regressed else EXIT_OK
    return EXIT_OK
