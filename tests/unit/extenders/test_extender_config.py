"""``extenders`` in a KubeSchedulerConfiguration: decoding, defaults, upstream's validation
(``pkg/scheduler/apis/config/validation/validation_test.go``, the extender cases) and
``ignoredByScheduler`` resources reaching NodeResourcesFit of every profile (upstream
``TestSchedulerWithExtenders``' buildExtenders check, ``scheduler_test.go`` ``TestInitPluginsWithIndexers``
is not about extenders and not ported)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from ksched.config import config_from_dict
from ksched.config.extenders import DEFAULT_EXTENDER_TIMEOUT_S, Extender, with_ignored_resources
from ksched.config.types import NodeResourcesFitArgs
from ksched.errors import ConfigError


def cfg(extenders: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": extenders,
        **extra,
    }


def test_decoded_with_defaults() -> None:
    config = config_from_dict(cfg([{"urlPrefix": "http://127.0.0.1:8888/x", "filterVerb": "filter"}]))
    (ext,) = config.extenders
    assert ext == Extender(url_prefix="http://127.0.0.1:8888/x", filter_verb="filter")
    assert ext.http_timeout_s == DEFAULT_EXTENDER_TIMEOUT_S


def test_every_field() -> None:
    pem = base64.b64encode(b"PEM").decode()
    raw = {
        "urlPrefix": "https://e:1/p",
        "filterVerb": "f",
        "preemptVerb": "pr",
        "prioritizeVerb": "pz",
        "weight": 3,
        "bindVerb": "b",
        "enableHTTPS": True,
        "tlsConfig": {"insecure": True, "serverName": "s", "caData": pem, "certFile": "c", "keyFile": "k"},
        "httpTimeout": "2s",
        "nodeCacheCapable": True,
        "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
        "ignorable": True,
    }
    (ext,) = config_from_dict(cfg([raw])).extenders
    assert ext.weight == 3 and ext.http_timeout_s == 2.0 and ext.node_cache_capable and ext.ignorable
    assert ext.tls is not None and ext.tls.ca_data == b"PEM" and ext.tls.server_name == "s"
    assert ext.managed_resources[0].ignored_by_scheduler


@pytest.mark.parametrize(
    ("extenders", "path", "message"),
    [
        pytest.param(
            [{"prioritizeVerb": "p", "weight": -1}],
            "extenders[0].weight",
            "must have a positive weight",
            id="negative weight",
        ),
        pytest.param(
            [{"prioritizeVerb": "p"}], "extenders[0].weight", "must have a positive weight", id="no weight"
        ),
        pytest.param(
            [{"bindVerb": "a"}, {"bindVerb": "b"}],
            "extenders",
            "only one extender can implement bind",
            id="two binders",
        ),
        pytest.param(
            [{"managedResources": [{"name": "example.com/foo"}, {"name": "example.com/foo"}]}],
            "extenders[0].managedResources[1].name",
            "duplicate extender managed resource name",
            id="duplicate managed resource",
        ),
        pytest.param(
            [{"managedResources": [{"name": "kubernetes.io/foo"}]}],
            "extenders[0].managedResources[0].name",
            "is an invalid extended resource name",
            id="not an extended resource",
        ),
        pytest.param(
            [{"tlsConfig": {"caData": "not base64!"}}],
            "extenders[0].tlsConfig.caData",
            "base64",
            id="bad caData",
        ),
        pytest.param(
            [{"tlsConfig": {"cafile": "x"}}],
            "extenders[0].tlsConfig.cafile",
            "unknown field",
            id="unknown tls field",
        ),
        pytest.param([{"filterverb": "x"}], "extenders[0].filterverb", "unknown field", id="unknown field"),
        pytest.param(
            [{"httpTimeout": 5}], "extenders[0].httpTimeout", "duration", id="timeout not a duration"
        ),
    ],
)
def test_invalid(extenders: list[dict[str, Any]], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict(cfg(extenders))
    assert path in str(err.value) and message in str(err.value)


def test_ignored_by_scheduler_resources_reach_every_profile() -> None:
    raw = cfg(
        [
            {
                "urlPrefix": "http://a",
                "managedResources": [
                    {"name": "example.com/foo", "ignoredByScheduler": True},
                    {"name": "example.com/bar"},
                ],
            }
        ],
        profiles=[
            {"schedulerName": "one"},
            {
                "schedulerName": "two",
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/baz"]}}
                ],
            },
        ],
    )
    config = with_ignored_resources(config_from_dict(raw))
    got = []
    for prof in config.profiles:
        args = prof.plugin_args["NodeResourcesFit"]
        assert isinstance(args, NodeResourcesFitArgs)
        got.append(args.ignored_resources)
    assert got == [("example.com/foo",), ("example.com/baz", "example.com/foo")]
