"""Parsed kube-scheduler vectors -> RunOptions (serving, precedence, gates) or a one-line refusal.

The precedence cases follow ``Options.ApplyTo`` in cmd/kube-scheduler/app/options/options.go:
deprecated flags apply only without ``--config``, leader-election flags always, and
``--pod-max-in-unschedulable-pods-duration`` always.
"""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path

import pytest

from ksched.cli import logsetup, main
from ksched.cli.pflag import FlagError
from ksched.cli.run_command import parse_run_args, run_options, version_text
from ksched.config import config_from_dict, default_config, load_config
from ksched.config.overrides import apply_overrides
from ksched.errors import ConfigError

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def options(*argv: str):
    return run_options(parse_run_args(list(argv)))


def effective(argv: list[str], doc: dict | None = None):
    opts = options(*argv)
    base = config_from_dict({**HEADER, **(doc or {})}) if opts.config_path else default_config()
    return apply_overrides(base, opts.overrides)


def test_serving_flags_fill_serving_options() -> None:
    o = options(
        "--bind-address=0.0.0.0",
        "--secure-port=10300",
        "--tls-cert-file=/c",
        "--tls-private-key-file=/k",
        "--tls-min-version=VersionTLS13",
        "--client-ca-file=/ca",
        "--requestheader-allowed-names=front",
        "--authorization-always-allow-paths=/healthz,/readyz",
        "--authentication-token-webhook-cache-ttl=1m",
        "--authentication-kubeconfig=/a",
        "--authorization-kubeconfig=/z",
        "--insecure-port=10251",
    )
    s = o.serving
    assert (s.secure.bind_address, s.secure.secure_port, s.secure.tls_cert_file) == ("0.0.0.0", 10300, "/c")
    assert s.secure.tls_min_version == "VersionTLS13"
    assert s.authentication.client_ca_file == "/ca"
    assert s.authentication.requestheader_allowed_names == ("front",)
    assert s.authentication.token_webhook_cache_ttl_s == 60.0
    assert (s.authentication.kubeconfig, s.authorization.kubeconfig) == ("/a", "/z")
    assert s.authorization.always_allow_paths == ("/healthz", "/readyz")
    assert s.insecure_port == 10251


def test_defaults_are_loopback_and_no_plain_http() -> None:
    s = options().serving
    assert (s.secure.bind_address, s.secure.secure_port, s.insecure_port) == ("127.0.0.1", 10259, None)


@pytest.mark.parametrize(
    ("argv", "doc", "attr", "want"),
    [
        pytest.param(
            ["--kube-api-qps=20"],
            None,
            ("client_connection", "qps"),
            20.0,
            id="without --config a deprecated flag applies",
        ),
        pytest.param(
            ["--config=/x", "--kube-api-qps=20"],
            {},
            ("client_connection", "qps"),
            50.0,
            id="with --config a deprecated flag is ignored",
        ),
        pytest.param(
            ["--kubeconfig=/kc"],
            None,
            ("client_connection", "kubeconfig"),
            "/kc",
            id="--kubeconfig without --config",
        ),
        pytest.param(
            ["--config=/x", "--kubeconfig=/kc"],
            {"clientConnection": {"kubeconfig": "/file"}},
            ("client_connection", "kubeconfig"),
            "/file",
            id="--kubeconfig with --config is ignored",
        ),
        pytest.param(
            ["--profiling=false"], None, ("enable_profiling",), False, id="--profiling without --config"
        ),
        pytest.param(
            ["--config=/x", "--profiling=true"],
            {"enableProfiling": False},
            ("enable_profiling",),
            False,
            id="--profiling with --config is ignored",
        ),
        pytest.param(
            ["--config=/x", "--leader-elect=false"],
            {"leaderElection": {"leaderElect": True}},
            ("leader_election", "leader_elect"),
            False,
            id="leader election flags beat the file",
        ),
        pytest.param(
            ["--config=/x", "--leader-elect-resource-name=other"],
            {},
            ("leader_election", "resource_name"),
            "other",
            id="resource name beats the file",
        ),
        pytest.param(
            ["--config=/x"],
            {"leaderElection": {"resourceNamespace": "ns"}},
            ("leader_election", "resource_namespace"),
            "ns",
            id="an unset flag leaves the file alone",
        ),
        pytest.param(
            ["--leader-elect-lease-duration=30s"],
            None,
            ("leader_election", "lease_duration_s"),
            30.0,
            id="lease duration without --config",
        ),
        pytest.param(
            ["--config=/x", "--pod-max-in-unschedulable-pods-duration=1m"],
            {},
            ("pod_max_in_unschedulable_pods_s",),
            60.0,
            id="pod-max-in-unschedulable applies with --config",
        ),
        pytest.param(
            [], None, ("pod_max_in_unschedulable_pods_s",), 300.0, id="pod-max-in-unschedulable default"
        ),
    ],
)
def test_precedence(argv: list[str], doc: dict | None, attr: tuple[str, ...], want: object) -> None:
    value: object = effective(argv, doc)
    for name in attr:
        value = getattr(value, name)
    assert value == want


def test_ignored_flags_are_named() -> None:
    assert options("--config=/x", "--kube-api-burst=5", "--leader-elect=false").overrides.ignored() == (
        "kube-api-burst",
    )


def test_flags_are_validated_after_applying() -> None:
    with pytest.raises(ConfigError) as err:
        effective(["--leader-elect-renew-deadline=20s"])
    assert err.value.path == "leaderElection.leaseDuration"
    with pytest.raises(ConfigError) as err:
        effective(["--leader-elect-resource-lock=endpointsleases"])
    assert (
        str(err.value)
        == 'leaderElection.resourceLock: invalid value "endpointsleases": resourceLock value must be "leases"'
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--feature-gates=NoSuchGate=true"], "unrecognized feature gate: NoSuchGate", id="unknown gate"
        ),
        pytest.param(
            ["--feature-gates=SchedulerQueueingHints=false"],
            "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
            id="a GA gate is locked",
        ),
        pytest.param(
            ["--feature-gates=SchedulerPopFromBackoffQ=false"],
            "SchedulerPopFromBackoffQ=false is not supported: ksched implements SchedulerPopFromBackoffQ",
            id="a beta gate off",
        ),
        pytest.param(
            ["--feature-gates=AllAlpha=true"],
            "StorageCapacityScoring=true (via AllAlpha) is not supported",
            id="AllAlpha",
        ),
        pytest.param(
            ["--kube-api-content-type=application/yaml"],
            "--kube-api-content-type=application/yaml is not supported",
            id="content type",
        ),
        pytest.param(
            ["--emulated-version=1.34"], "--emulated-version=1.34 is not supported", id="emulated version"
        ),
        pytest.param(
            ["--disabled-metrics=foo"], "--disabled-metrics is not supported", id="disabled metrics"
        ),
        pytest.param(
            ["--show-hidden-metrics-for-version=1.30"], '"1.30" is not valid', id="hidden metrics version"
        ),
        pytest.param(["--tls-min-version=TLS1.2"], 'unknown tls version "TLS1.2"', id="tls version"),
        pytest.param(
            ["--secure-port=70000"], "--secure-port 70000 must be between 0 and 65535", id="port range"
        ),
        pytest.param(
            ["--bind-worker=maybe"], 'invalid argument "maybe" for "--bind-worker"', id="bind worker"
        ),
    ],
)
def test_refusals(argv: list[str], message: str) -> None:
    with pytest.raises((FlagError, ConfigError)) as err:
        options(*argv)
    assert message in str(err.value)


def test_accepted_gates_reach_the_options() -> None:
    o = options("--feature-gates=SchedulerQueueingHints=true,DRADeviceTaints=false,AllAlpha=false")
    assert o.feature_gates.enabled("SchedulerQueueingHints") and not o.feature_gates.enabled(
        "DRADeviceTaints"
    )


def test_version_keeps_upstreams_shape() -> None:
    text = version_text("true")
    assert text is not None and text.startswith("Kubernetes v1.35.0+ksched.")
    raw = version_text("raw")
    assert raw is not None and raw.startswith(
        'version.Info{Major:"1", Minor:"35", GitVersion:"v1.35.0+ksched.'
    )
    assert version_text("false") is None
    with pytest.raises(FlagError):
        version_text("json")


def test_main_prints_one_line_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--port=10259"]) == 2
    assert capsys.readouterr().err == "ksched run: error: unknown flag: --port\n"


def test_a_run_that_ends_before_scheduling_leaves_the_collector_on() -> None:
    # the collector is paused only while the scheduler's modules load (ksched.cli._collector_paused)
    assert gc.isenabled()
    assert main(["run", "--port=10259"]) == 2
    assert gc.isenabled()


def test_write_config_to_writes_the_effective_config(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    assert main(["run", f"--write-config-to={out}", "--leader-elect=false", "--kube-api-burst=7"]) == 0
    cfg = load_config(out)
    assert (cfg.leader_election.leader_elect, cfg.client_connection.burst) == (False, 7)
    assert cfg.profiles == default_config().profiles


def test_vmodule_and_json_logging(capsys: pytest.CaptureFixture[str]) -> None:
    settings = logsetup.LogSettings(v=0, vmodule=logsetup.parse_vmodule("queue*=5"), format="json")
    logsetup.configure(settings)
    try:
        logging.getLogger("ksched.scheduler.queuex").debug("hello %s", "there")
        logging.getLogger("ksched.other").debug("hidden")
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
        assert [(d["msg"], d["v"]) for d in lines] == [("hello there", 4)]
        assert set(lines[0]) == {"ts", "caller", "msg", "v"}
    finally:
        logging.setLoggerClass(logging.Logger)
        logging.getLogger("ksched.scheduler.queuex").setLevel(logging.NOTSET)


def test_vmodule_syntax_is_checked() -> None:
    with pytest.raises(FlagError):
        logsetup.parse_vmodule("queue")
    with pytest.raises(FlagError, match="Unsupported log format"):
        main_like = parse_run_args(["--logging-format=xml"])
        from ksched.cli.run_command import log_settings

        log_settings(main_like)


def test_v135_only_flags() -> None:
    o = options(
        "--disable-http2-serving",
        "--min-compatibility-version=kube=1.34",
        "--feature-gates=kube:SchedulerQueueingHints=true",
    )
    assert o.serving.secure.disable_http2_serving is True
    assert o.feature_gates.enabled("SchedulerQueueingHints")
    with pytest.raises(ConfigError, match="component not registered: wardle"):
        options("--feature-gates=wardle:featureA=true")
    with pytest.raises(FlagError, match=r"--min-compatibility-version=1\.30 is not valid"):
        options("--min-compatibility-version=1.30")
