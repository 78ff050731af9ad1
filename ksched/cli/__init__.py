"""The ``ksched`` command: ``run``, ``explain``, ``sim serve``, ``bench``, ``version``.

``run`` takes kube-scheduler's command line in pflag syntax (:mod:`ksched.cli.run_command`);
the other commands use argparse.

This is the only module that configures logging. Every command turns a :class:`KschedError`
into one line on stderr and exit status 2; a traceback means a ksched bug.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ksched import __version__
from ksched.errors import InputError, KschedError

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity < 4 else logging.DEBUG
    from ksched.cli.logsetup import BoundedFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BoundedFormatter())  # every line bounded, as for ``run``
    logging.basicConfig(level=level, handlers=[handler])


def _cmd_explain(args: argparse.Namespace) -> int:
    from ksched.explain import explain, load_cluster, load_pod, render_text

    cluster = load_cluster(args.cluster)
    pod = load_pod(args.pod)
    report = explain(cluster, pod, args.config, seed=args.seed, plugins=tuple(args.plugin or ()))
    output = args.output or ("text" if sys.stdout.isatty() else "json")
    if output == "json":
        sys.stdout.buffer.write(
            orjson.dumps(report, option=orjson.OPT_INDENT_2 if args.pretty else 0) + b"\n"
        )
    else:
        sys.stdout.write(render_text(report) + "\n")
    sys.stdout.flush()
    return EXIT_OK


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """CPython's cyclic collector off for the block, then as it was.

    Loading the scheduler's modules (about a thousand, with aiohttp, numpy and prometheus_client)
    makes only objects that live as long as the process, yet the young collections they trigger
    take a tenth of the import time, on the way to the first binding. :func:`ksched.runner.run`
    then keeps the collector off for the informers' initial lists (``_loading_gc``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _cmd_run(argv: Sequence[str]) -> int:
    """``ksched run ARGS``: kube-scheduler's command line (:mod:`ksched.cli.run_command`)."""
    with _collector_paused():
        import prometheus_client

        from ksched.cli import logsetup, run_command
        from ksched.runner import run

    parsed = run_command.parse_run_args(argv)
    if parsed["help"]:
        sys.stdout.write(run_command.help_text())
        return EXIT_OK
    version = run_command.version_text(parsed["version"])
    if version is not None:
        print(version)
        return EXIT_OK
    logsetup.configure(run_command.log_settings(parsed))
    options = run_command.run_options(parsed)
    if parsed["write-config-to"]:
        return _write_config(options, parsed["write-config-to"])
    # kube-scheduler exposes no ``*_created`` series; prometheus_client can only turn them off
    # process-wide, which is why this happens here and not in ksched.metrics.
    prometheus_client.disable_created_metrics()
    return run(options)


def _write_config(options: Any, path: str) -> int:
    """``--write-config-to``: the effective configuration (defaults and flags applied), then exit 0."""
    from ksched.config.encode import config_to_yaml
    from ksched.config.overrides import apply_overrides
    from ksched.framework.loader import load_with_plugins

    config, _ = load_with_plugins(options.config_path, options.plugins)
    text = config_to_yaml(apply_overrides(config, options.overrides))
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"--write-config-to {path}: cannot write: {exc.strerror or exc}") from exc
    logging.getLogger(__name__).info("Wrote configuration to: %s", path)
    return EXIT_OK


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"ksched {__version__}")
    return EXIT_OK


def _cmd_sim(args: argparse.Namespace) -> int:
    from ksched.sim.cli import storage_controllers_from_args
    from ksched.simrun import run_sim, summary_json

    summary = run_sim(
        nodes=args.nodes,
        pods=args.pods,
        workload=args.workload,
        timeout_s=args.timeout,
        config_path=args.config,
        verbosity=args.verbosity,
        keep_dir=args.keep_dir,
        plugins=tuple(args.plugin or ()),
        storage_controllers=storage_controllers_from_args(args),
    )
    print(summary_json(summary) if args.json else summary.text())
    return EXIT_OK if summary.double_bindings == 0 else 1


def _cmd_sim_serve(args: argparse.Namespace) -> int:
    from ksched.sim.cli import run_serve

    return run_serve(args)


_PLUGIN_HELP = (
    "an out-of-tree plugin to make available to the config, e.g. mypkg.plugins:MyPlugin (repeatable; "
    "the current directory is importable; entry points of group ksched.plugins are loaded too)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksched", description="A Kubernetes scheduler with a compiled hot path."
    )
    parser.add_argument(
        "-v", "--verbosity", type=int, default=0, help="log level: 0 warnings, 2 info, 4+ debug"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    _add_explain(sub)
    _add_run(sub)
    _add_sim(sub)
    from ksched.bench.command import add_bench_parser, run_bench

    add_bench_parser(sub).set_defaults(func=run_bench)

    ver = sub.add_parser("version", help="print the version")
    ver.set_defaults(func=_cmd_version)
    return parser


def _add_explain(sub: Any) -> None:
    ex = sub.add_parser("explain", help="show what every plugin thinks of every node for one pod")
    ex.add_argument(
        "--cluster", required=True, help="YAML/JSON file with Node and Pod objects (a List or documents)"
    )
    ex.add_argument("--pod", required=True, help="YAML/JSON file with one Pod")
    ex.add_argument("--config", help="KubeSchedulerConfiguration file (default: upstream's default profile)")
    ex.add_argument("--output", choices=("json", "text"), help="default: text on a terminal, json otherwise")
    ex.add_argument("--pretty", action="store_true", help="indent JSON output")
    ex.add_argument(
        "--seed", type=int, default=0, help="seed for the random tie-break among equal best nodes"
    )
    ex.add_argument("--plugin", action="append", metavar="MODULE:FACTORY", help=_PLUGIN_HELP)
    ex.set_defaults(func=_cmd_explain)


def _add_run(sub: Any) -> None:
    """``run`` is parsed by :mod:`ksched.cli.run_command` (pflag syntax); this entry is for --help."""
    sub.add_parser(
        "run",
        help="schedule pods of a real (or embedded) cluster until stopped; takes kube-scheduler's flags",
        add_help=False,
    )


def _add_sim(sub: Any) -> None:
    """``ksched sim`` (schedule a generated workload and summarize) and ``ksched sim serve``."""
    sim = sub.add_parser(
        "sim",
        help="schedule pods on the embedded local cluster and summarize (or 'sim serve' to only serve it)",
    )
    sim.add_argument("--nodes", type=int, default=5000, help="simulated nodes (default 5000)")
    sim.add_argument(
        "--pods", type=int, default=10000, help="pods to schedule, created at once (default 10000)"
    )
    sim.add_argument("--workload", default="plain", help="pod shape (default plain)")
    sim.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    sim.add_argument("--config", help="KubeSchedulerConfiguration for the scheduler process")
    sim.add_argument("--json", action="store_true", help="print the summary as JSON")
    sim.add_argument("--keep-dir", help="keep kubeconfig, config and scheduler log in this directory")
    sim.add_argument("--plugin", action="append", metavar="MODULE:FACTORY", help=_PLUGIN_HELP)
    sim.set_defaults(func=_cmd_sim)
    from ksched.sim.cli import add_serve_parser, add_storage_controller_flags

    add_storage_controller_flags(sim)
    sim_sub = sim.add_subparsers(dest="sim_command")
    add_serve_parser(sim_sub)
    for action in sim_sub.choices.values():
        action.set_defaults(func=_cmd_sim_serve)


def _split_run(argv: Sequence[str]) -> list[str] | None:
    """The flags after ``run`` (with a leading global ``-v N`` passed on as ``--v=N``), or None
    when the command is not ``run``."""
    verbosity: str | None = None
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in ("-v", "--verbosity") and i + 1 < len(argv):
            verbosity, i = argv[i + 1], i + 2
        elif word.startswith(("--verbosity=", "-v")) and word not in ("-v", "--verbosity"):
            verbosity, i = word.split("=", 1)[1] if "=" in word else word[2:], i + 1
        elif word == "run":
            rest = list(argv[i + 1 :])
            return ([f"--v={verbosity}"] if verbosity is not None else []) + rest
        else:
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    run_argv = _split_run(words)
    if run_argv is not None:
        try:
            return _cmd_run(run_argv)
        except KschedError as exc:
            print(f"ksched run: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt:
            return 130
    parser = build_parser()
    args = parser.parse_args(words)
    _configure_logging(args.verbosity)
    try:
        return int(args.func(args))
    except KschedError as exc:
        print(f"ksched {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


def scheduler_main() -> int:
    """``ksched-scheduler``: exactly ``ksched run``, so a kube-scheduler manifest changes only its
    command name."""
    return main(["run", *sys.argv[1:]])
