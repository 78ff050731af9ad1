"""``ksched run`` (and ``ksched-scheduler``): kube-scheduler's command line, parsed as pflag does.

The flags are the table in :mod:`ksched.cli.flags`. This module turns a parsed vector into
:class:`ksched.runner.RunOptions` (with the serving options and the flag overrides), handles
``--help``, ``--version`` and ``--write-config-to``, and refuses what ksched cannot honour with one
line naming the flag (exit 2).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ksched import __version__
from ksched.cli import logsetup
from ksched.cli.flags import FLAGS, PROTOBUF
from ksched.cli.pflag import FlagError, Parsed, parse
from ksched.cli.serving import serving_options
from ksched.config.features import FeatureGates, feature_gates
from ksched.config.overrides import DEPRECATED_FLAGS, LEADER_FIELDS, FlagOverrides
from ksched.config.validation import JSON

KUBE_VERSION = "v1.35.0"
"""The kube-scheduler release whose decisions, flags and config ksched follows."""
GIT_VERSION = f"{KUBE_VERSION}+ksched.{__version__}"
"""``--version`` prints ``Kubernetes <GIT_VERSION>``: upstream's shape, a semver a probe parses as
v1.35.0, with ksched's own version as build metadata."""
_BIND_WORKER = {"auto": None, "on": True, "off": False}


def parse_run_args(argv: Sequence[str]) -> Parsed:
    """The parsed vector; raises :class:`FlagError` as kube-scheduler's cobra/pflag would."""
    parsed = parse(argv, FLAGS)
    if parsed.args:
        raise FlagError(f'"kube-scheduler" does not take any arguments, got {parsed.args!r}')
    return parsed


def version_text(value: str) -> str | None:
    """What ``--version[=value]`` prints, or None (not asked)."""
    if value in ("false", "0", "f", "F", "FALSE", "False"):
        return None
    if value == "raw":
        return (
            f'version.Info{{Major:"1", Minor:"35", GitVersion:"{GIT_VERSION}", GitCommit:"", '
            f'GitTreeState:"", BuildDate:"", GoVersion:"python{sys.version.split()[0]}", '
            f'Compiler:"cpython", Platform:"{sys.platform}/{_machine()}"}}'
        )
    if value in ("true", "1", "t", "T", "TRUE", "True"):
        return f"Kubernetes {GIT_VERSION}"
    raise FlagError(
        f'invalid argument "{value}" for "--version" flag: unrecognized version flag value "{value}"'
    )


def _machine() -> str:
    import platform

    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def log_settings(parsed: Parsed) -> logsetup.LogSettings:
    fmt = parsed["logging-format"]
    if fmt not in ("text", "json"):
        raise FlagError(f'--logging-format: Invalid value: "{fmt}": Unsupported log format (text, json)')
    for name in ("log-text-info-buffer-size", "log-json-info-buffer-size"):
        if parsed[name] not in ("0", "0B", "0Mi", "0Ki"):
            raise FlagError(f"--{name}={parsed[name]} is not supported: ksched writes every record at once")
    if parsed["log-flush-frequency"] <= 0:
        raise FlagError("--log-flush-frequency: must be greater than zero")
    split = parsed["log-json-split-stream"] if fmt == "json" else parsed["log-text-split-stream"]
    return logsetup.LogSettings(
        v=parsed["v"], vmodule=logsetup.parse_vmodule(parsed["vmodule"]), format=fmt, split_stream=split
    )


def check_unsupported(parsed: Parsed) -> None:
    """Flags ksched accepts only at values it honours."""
    for value in parsed["emulated-version"]:
        if value.strip() not in ("1.35", "kube=1.35"):
            raise FlagError(
                f"--emulated-version={value} is not supported: ksched is kube-scheduler 1.35 only"
            )
    for value in parsed["min-compatibility-version"]:
        version = value.strip().removeprefix("kube=")
        if version not in ("1.32", "1.33", "1.34", "1.35"):
            raise FlagError(
                f"--min-compatibility-version={value} is not valid: kube=1.32..1.35 (at most 1.35)"
            )
    hidden = parsed["show-hidden-metrics-for-version"]
    if hidden not in ("", "1.34"):
        raise FlagError(
            f'--show-hidden-metrics-for-version: "{hidden}" is not valid: only the previous minor, 1.34'
        )
    for name in ("disabled-metrics", "allow-metric-labels", "allow-metric-labels-manifest"):
        if name in parsed.changed and parsed[name]:
            raise FlagError(f"--{name} is not supported: ksched's metrics cannot be disabled or relabelled")
    if parsed["bind-worker"] not in _BIND_WORKER:
        raise FlagError(
            f'invalid argument "{parsed["bind-worker"]}" for "--bind-worker" flag: auto, on or off'
        )
    content = parsed["kube-api-content-type"]
    if content not in (JSON, PROTOBUF):
        raise FlagError(f"--kube-api-content-type={content} is not supported: ksched sends {JSON}")


def gates(parsed: Parsed) -> FeatureGates:
    return feature_gates(parsed["feature-gates"])


def flag_overrides(parsed: Parsed) -> FlagOverrides:
    wanted = (*LEADER_FIELDS, *DEPRECATED_FLAGS)
    given: dict[str, Any] = {name: parsed[name] for name in wanted if name in parsed.changed}
    return FlagOverrides(
        config_given=bool(parsed["config"]),
        given=given,
        pod_max_in_unschedulable_pods_s=parsed["pod-max-in-unschedulable-pods-duration"],
    )


def run_options(parsed: Parsed) -> Any:
    """The :class:`ksched.runner.RunOptions` of a parsed vector (validated)."""
    from ksched.runner import RunOptions

    check_unsupported(parsed)
    return RunOptions(
        config_path=parsed["config"] or None,
        overrides=flag_overrides(parsed),
        master=parsed["master"],
        serving=serving_options(parsed),
        feature_gates=gates(parsed),
        plugins=tuple(parsed["plugin"]),
        bind_worker=_BIND_WORKER[parsed["bind-worker"]],
    )


def help_text() -> str:
    lines = ["Usage:\n  ksched run [flags]   (or ksched-scheduler [flags], kube-scheduler's command line)\n"]
    group = ""
    for flag in FLAGS:
        if flag.group != group:
            group = flag.group
            lines.append(f"\n{group.capitalize()} flags:\n")
        short = f"-{flag.shorthand}, " if flag.shorthand else "    "
        lines.append(
            f"  {short}--{flag.name} {flag.kind}  {flag.help}"
            + (f" [ksched: {flag.ksched}]" if flag.ksched else "")
            + "\n"
        )
    return "".join(lines)
