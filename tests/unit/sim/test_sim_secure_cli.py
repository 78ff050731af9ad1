"""``ksched sim serve --secure``'s flags: ``--user-kubeconfig`` specs and what plain mode refuses."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ksched.sim.cli import add_serve_parser, parse_user_kubeconfig, run_serve


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            "system:kube-scheduler=scheduler.conf",
            ("system:kube-scheduler", (), "scheduler.conf"),
            id="a system user keeps its colon",
        ),
        pytest.param(
            "system:kube-scheduler:g1,g2=/tmp/s.conf",
            ("system:kube-scheduler", ("g1", "g2"), "/tmp/s.conf"),
            id="a system user with groups",
        ),
        pytest.param("alice:devs=a.conf", ("alice", ("devs",), "a.conf"), id="a user with a group"),
        pytest.param("bob=b.conf", ("bob", (), "b.conf"), id="a user alone"),
    ],
)
def test_sim_parse_user_kubeconfig(spec: str, want: tuple[str, tuple[str, ...], str]) -> None:
    user, groups, path = parse_user_kubeconfig(spec)
    assert (user, groups, str(path)) == want


@pytest.mark.parametrize("spec", ["nopath=", "=p.conf", "no-equals"])
def test_sim_parse_user_kubeconfig_refuses(spec: str) -> None:
    with pytest.raises(ValueError, match="expected USER"):
        parse_user_kubeconfig(spec)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ("--user-kubeconfig", "bob=b.conf"), "--user-kubeconfig needs --secure", id="user kubeconfig"
        ),
        pytest.param(("--cert-dir", "pki"), "--cert-dir needs --secure", id="cert dir"),
    ],
)
def test_sim_serve_plain_refuses_secure_only_flags(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run_serve(_args(*argv)) == 2
    assert message in capsys.readouterr().err


def test_sim_serve_bad_token_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "tokens.csv"
    bad.write_text("only,two\n")
    assert run_serve(_args("--secure", "--token-auth-file", str(bad))) == 2
    assert "must have at least 3 columns" in capsys.readouterr().err
