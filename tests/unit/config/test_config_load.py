"""Loading files: YAML and JSON, strict decoding, file-level errors.

Upstream's loader is ``cmd/kube-scheduler/app/options/configfile.go`` with the strict codecs of
``pkg/scheduler/apis/config/scheme``; cases follow ``scheme_test.go`` (unknown fields, wrong
types, wrong apiVersion/kind) rather than porting it line by line.
"""

from __future__ import annotations

import json

import pytest

from ksched.config import load_config
from ksched.config.durations import parse_go_duration
from ksched.errors import ConfigError

YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: DefaultPreemption
    args: {}
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""


def write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_yaml(tmp_path):
    cfg = load_config(write(tmp_path, YAML))
    prof = cfg.profiles[0]
    assert prof.score_weights["NodeResourcesFit"] == 5
    assert prof.plugin_args["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"
    assert cfg.leader_election.leader_elect is False


def test_load_json(tmp_path):
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "podMaxBackoffSeconds": 4,
    }
    assert load_config(write(tmp_path, json.dumps(doc), "c.json")).pod_max_backoff_s == 4


def test_errors_name_the_file(tmp_path):
    path = write(tmp_path, YAML.replace("MostAllocated", "Foo"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f'{path}: profiles[0].pluginConfig[1].args.scoringStrategy.type: unsupported value "Foo"'
    )
    assert info.value.path == "profiles[0].pluginConfig[1].args.scoringStrategy.type"


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        pytest.param(
            "apiVersion: v1\nkind: Pod\n", 'apiVersion: unsupported value "v1"', id="a Pod manifest"
        ),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            'apiVersion: unsupported value "kubescheduler.config.k8s.io/v1beta3"',
            id="an old apiVersion",
        ),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
            'kind: unsupported value "Policy"',
            id="the wrong kind",
        ),
        pytest.param("kind: KubeSchedulerConfiguration\n", "apiVersion: required", id="no apiVersion"),
        pytest.param("- a\n- b\n", "not a KubeSchedulerConfiguration", id="a YAML list"),
        pytest.param("", "not a KubeSchedulerConfiguration", id="an empty file"),
        pytest.param("a: [1, 2\n", "not valid YAML or JSON at line", id="broken YAML"),
    ],
)
def test_not_a_kube_scheduler_configuration(tmp_path, text, expect):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ")
    assert expect in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml")


HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("body", "path", "problem"),
    [
        pytest.param("foo: 1\n", "foo", "unknown field", id="unknown top-level field"),
        pytest.param(
            "profiles:\n- schedulerName: a\n  plugin: {}\n",
            "profiles[0].plugin",
            "unknown field",
            id="unknown profile field",
        ),
        pytest.param(
            "leaderElection:\n  leaseDurationSeconds: 3\n",
            "leaderElection.leaseDurationSeconds",
            "unknown field",
            id="unknown leader election field",
        ),
        pytest.param(
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWait: 2}\n",
            "profiles[0].pluginConfig[0].args.hardPodAffinityWait",
            "unknown field",
            id="unknown field in plugin args",
        ),
        pytest.param(
            "parallelism: '8'\n",
            "parallelism",
            'expected an integer, got string "8"',
            id="a string where a number goes",
        ),
        pytest.param(
            "parallelism: 1.5\n", "parallelism", "expected an integer, got number 1.5", id="a float"
        ),
        pytest.param(
            "enableProfiling: yes please\n",
            "enableProfiling",
            'expected true or false, got string "yes please"',
            id="a string where a boolean goes",
        ),
        pytest.param(
            "leaderElection:\n  leaseDuration: 15\n",
            "leaderElection.leaseDuration",
            'expected a duration string such as "15s", got integer 15',
            id="a number where a duration goes",
        ),
        pytest.param(
            "leaderElection:\n  leaseDuration: 15 s\n",
            "leaderElection.leaseDuration",
            'invalid duration "15 s": use Go syntax such as "15s" or "1m30s"',
            id="a malformed duration",
        ),
        pytest.param(
            "profiles: {}\n", "profiles", "expected a list, got object {}", id="profiles not a list"
        ),
    ],
)
def test_strict_decoding(tmp_path, body, path, problem):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, HEAD + body))
    assert (info.value.path, info.value.problem) == (path, problem)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes and seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1.5h", 5400.0, id="fractional hours"),
        pytest.param("0", 0.0, id="bare zero"),
        pytest.param("-2s", -2.0, id="negative"),
        pytest.param("100us", 1e-4, id="microseconds"),
    ],
)
def test_parse_go_duration(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "s", "", "1d", "1m 30s", "--1s"])
def test_parse_go_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_go_duration(text)
