"""kube-scheduler argument vectors -> parsed flags, or pflag's exact error.

Upstream cases not ported: pflag's ``--flag=`` for a list (empty list) is covered; cobra's usage
text after an error is not printed (ksched prints one line).
"""

from __future__ import annotations

import pytest

from ksched.cli.flags import FLAGS
from ksched.cli.pflag import FlagError, parse
from ksched.cli.run_command import parse_run_args

KUBEADM = [
    "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
    "--bind-address=127.0.0.1",
    "--kubeconfig=/etc/kubernetes/scheduler.conf",
    "--leader-elect=true",
]


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param(
            KUBEADM,
            {
                "kubeconfig": "/etc/kubernetes/scheduler.conf",
                "leader-elect": True,
                "bind-address": "127.0.0.1",
            },
            id="kubeadm's static-pod manifest",
        ),
        pytest.param(["--leader-elect"], {"leader-elect": True}, id="a bare boolean is true"),
        pytest.param(["--leader-elect=false"], {"leader-elect": False}, id="boolean =false"),
        pytest.param(["--leader-elect=F"], {"leader-elect": False}, id="strconv.ParseBool spellings"),
        pytest.param(["--config", "/c.yaml"], {"config": "/c.yaml"}, id="value as the next word"),
        pytest.param(["--secure-port", "10260"], {"secure-port": 10260}, id="an int"),
        pytest.param(
            ["--leader-elect-lease-duration=1m30s"], {"leader-elect-lease-duration": 90.0}, id="a Go duration"
        ),
        pytest.param(
            ["--leader-elect-retry-period=100ms"], {"leader-elect-retry-period": 0.1}, id="milliseconds"
        ),
        pytest.param(["--kube-api-qps=20.5"], {"kube-api-qps": 20.5}, id="a float32"),
        pytest.param(["-v", "4"], {"v": 4}, id="shorthand with a separate value"),
        pytest.param(["-v=3"], {"v": 3}, id="shorthand with ="),
        pytest.param(["-v5"], {"v": 5}, id="shorthand glued"),
        pytest.param(["--v=2"], {"v": 2}, id="long --v"),
        pytest.param(
            ["--tls-cipher-suites=A,B", "--tls-cipher-suites=C"],
            {"tls-cipher-suites": ("A", "B", "C")},
            id="a stringSlice appends across uses",
        ),
        pytest.param(
            ["--authorization-always-allow-paths=/healthz"],
            {"authorization-always-allow-paths": ("/healthz",)},
            id="a stringSlice replaces its default",
        ),
        pytest.param(
            [
                "--feature-gates=SchedulerQueueingHints=true,DRADeviceTaints=false",
                "--feature-gates=SchedulerPopFromBackoffQ=true",
            ],
            {
                "feature-gates": {
                    "SchedulerQueueingHints": True,
                    "DRADeviceTaints": False,
                    "SchedulerPopFromBackoffQ": True,
                }
            },
            id="mapStringBool merges",
        ),
        pytest.param(["--version"], {"version": "true"}, id="--version alone"),
        pytest.param(["--version=raw"], {"version": "raw"}, id="--version=raw"),
        pytest.param(
            [],
            {
                "leader-elect": True,
                "secure-port": 10259,
                "kube-api-burst": 100,
                "pod-max-in-unschedulable-pods-duration": 300.0,
            },
            id="defaults",
        ),
    ],
)
def test_parse(argv: list[str], want: dict[str, object]) -> None:
    parsed = parse_run_args(argv)
    assert {k: parsed[k] for k in want} == want
    assert parsed.changed == {a.lstrip("-").split("=")[0] for a in argv if a.startswith("--")} | (
        {"v"} if any(a.startswith("-v") for a in argv) else set()
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--port=10251"], "unknown flag: --port", id="kube-scheduler has no --port any more"),
        pytest.param(["--no-leader-elect"], "unknown flag: --no-leader-elect", id="no argparse negation"),
        pytest.param(["-x"], "unknown shorthand flag: 'x' in -x", id="unknown shorthand"),
        pytest.param(["--config"], "flag needs an argument: --config", id="missing value"),
        pytest.param(
            ["--leader-elect=yes"],
            'invalid argument "yes" for "--leader-elect" flag: strconv.ParseBool: parsing "yes": '
            "invalid syntax",
            id="bad boolean",
        ),
        pytest.param(
            ["--secure-port=abc"],
            'invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": '
            "invalid syntax",
            id="bad int",
        ),
        pytest.param(
            ["--leader-elect-lease-duration=15"],
            'invalid argument "15" for "--leader-elect-lease-duration" flag: time: invalid duration "15"',
            id="a duration needs a unit",
        ),
        pytest.param(
            ["--kube-api-burst=3000000000"],
            'invalid argument "3000000000" for "--kube-api-burst" flag: strconv.ParseInt: parsing '
            '"3000000000": value out of range',
            id="int32 out of range",
        ),
        pytest.param(
            ["--feature-gates=Foo"],
            'invalid argument "Foo" for "--feature-gates" flag: missing bool value for Foo',
            id="a gate without a value",
        ),
        pytest.param(
            ["extra"], "\"kube-scheduler\" does not take any arguments, got ['extra']", id="a positional word"
        ),
    ],
)
def test_parse_errors(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as err:
        parse_run_args(argv)
    assert str(err.value) == message


def test_the_boolean_does_not_take_the_next_word() -> None:
    parsed = parse(["--leader-elect", "false"], FLAGS)
    assert parsed["leader-elect"] is True and parsed.args == ["false"]


def test_every_flag_has_help_and_a_group() -> None:
    names = [f.name for f in FLAGS]
    assert len(names) == len(set(names))
    assert all(f.help and f.group for f in FLAGS)


def test_docs_list_every_flag() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "command-line.md").read_text()
    assert [f.name for f in FLAGS if f"`--{f.name}`" not in text] == []


def test_ksched_scheduler_is_ksched_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys
    import tomllib
    from pathlib import Path

    from ksched.cli import scheduler_main

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["ksched-scheduler"] == "ksched.cli:scheduler_main"
    monkeypatch.setattr(sys, "argv", ["ksched-scheduler", "--version"])
    assert scheduler_main() == 0
    assert capsys.readouterr().out.startswith("Kubernetes v1.35.0+ksched.")
