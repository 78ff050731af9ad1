"""``extenders`` of a KubeSchedulerConfiguration v1: typed, defaulted and validated.

Upstream: ``staging/src/k8s.io/kube-scheduler/config/v1/types.go`` (``Extender``,
``ExtenderTLSConfig``, ``ExtenderManagedResource``), ``pkg/scheduler/apis/config/validation``
(``validateExtenders``) and ``pkg/scheduler/extender.go`` (an unset or zero ``httpTimeout`` means
``DefaultExtenderTimeout``, 5 s). The ``*Data`` fields of ``tlsConfig`` are ``[]byte`` in Go, so
the file spells them in base64, as JSON does.

Validation is upstream's: ``urlPrefix`` is not checked here (upstream accepts an empty one); the
scheduler refuses a prefix that is not an ``http://`` or ``https://`` URL when it builds the
extender (:mod:`ksched.scheduler.extenders`), before anything is scheduled.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ksched.config import _decode as d
from ksched.config._names_validation import qualified_name_problems
from ksched.config.names import NODE_RESOURCES_FIT
from ksched.config.pluginargs import invalid
from ksched.config.types import NodeResourcesFitArgs, SchedulerConfiguration
from ksched.errors import ConfigError

DEFAULT_EXTENDER_TIMEOUT_S = 5.0
"""Upstream ``DefaultExtenderTimeout``."""

_FROZEN = {"frozen": True, "slots": True, "kw_only": True}

_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")


@dataclass(**_FROZEN)
class ExtenderTLSConfig:
    """``tlsConfig``: how the scheduler connects to an HTTPS extender."""

    insecure: bool = False
    """Do not verify the extender's certificate."""
    server_name: str = ""
    """The name checked in the certificate (SNI) instead of the URL's host."""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    """PEM client certificate; takes precedence over ``cert_file``."""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(**_FROZEN)
class ExtenderManagedResource:
    """An extended resource the extender manages."""

    name: str
    ignored_by_scheduler: bool = False
    """NodeResourcesFit of every profile then ignores the resource."""


@dataclass(**_FROZEN)
class Extender:
    """One HTTP extender; its name in logs and messages is its ``url_prefix``, as upstream."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    """Multiplies the prioritize scores (positive when ``prioritize_verb`` is set)."""
    bind_verb: str = ""
    enable_https: bool = False
    tls: ExtenderTLSConfig | None = None
    http_timeout_s: float = DEFAULT_EXTENDER_TIMEOUT_S
    node_cache_capable: bool = False
    """Send node names only (the extender keeps its own node cache) instead of Node objects."""
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    """Empty: the extender is interested in every pod; else only in pods asking for one of them."""
    ignorable: bool = False
    """Scheduling goes on without this extender when it fails."""


def decode_and_validate_extenders(raw: Sequence[Any], errs: list[ConfigError]) -> tuple[Extender, ...]:
    """Upstream's decoding and ``validateExtenders``; problems go to ``errs``."""
    out = []
    binders = 0
    managed: set[str] = set()
    for i, item in enumerate(raw):
        path = d.index("extenders", i)
        ext = _extender(d.mapping(item, path, _EXTENDER_FIELDS), path, errs)
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(
                invalid(d.child(path, "weight"), ext.weight, "must have a positive weight applied to it")
            )
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            rp = d.child(d.index(d.child(path, "managedResources"), j), "name")
            _check_resource_name(res.name, rp, errs)
            if res.name in managed:
                errs.append(invalid(rp, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
        out.append(ext)
    if binders > 1:
        errs.append(
            invalid(
                "extenders",
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return tuple(out)


def _extender(m: Mapping[str, Any], path: str, errs: list[ConfigError]) -> Extender:
    url = d.string(m, "urlPrefix", path)
    timeout = d.duration(m, "httpTimeout", path, 0.0)
    if timeout < 0:
        errs.append(invalid(d.child(path, "httpTimeout"), m.get("httpTimeout"), "must not be negative"))
    tls_raw = m.get("tlsConfig")
    resources = []
    for j, res in enumerate(d.seq(m, "managedResources", path)):
        rp = d.index(d.child(path, "managedResources"), j)
        rm = d.mapping(res, rp, ("name", "ignoredByScheduler"))
        resources.append(
            ExtenderManagedResource(
                name=d.string(rm, "name", rp),
                ignored_by_scheduler=d.boolean(rm, "ignoredByScheduler", rp, False),
            )
        )
    return Extender(
        url_prefix=url,
        filter_verb=d.string(m, "filterVerb", path),
        preempt_verb=d.string(m, "preemptVerb", path),
        prioritize_verb=d.string(m, "prioritizeVerb", path),
        weight=d.integer(m, "weight", path, 0, bits=64),
        bind_verb=d.string(m, "bindVerb", path),
        enable_https=d.boolean(m, "enableHTTPS", path, False),
        tls=None if tls_raw is None else _tls(tls_raw, d.child(path, "tlsConfig")),
        http_timeout_s=timeout if timeout > 0 else DEFAULT_EXTENDER_TIMEOUT_S,
        node_cache_capable=d.boolean(m, "nodeCacheCapable", path, False),
        managed_resources=tuple(resources),
        ignorable=d.boolean(m, "ignorable", path, False),
    )


def _tls(raw: object, path: str) -> ExtenderTLSConfig:
    m = d.mapping(raw, path, _TLS_FIELDS)
    return ExtenderTLSConfig(
        insecure=d.boolean(m, "insecure", path, False),
        server_name=d.string(m, "serverName", path),
        cert_file=d.string(m, "certFile", path),
        key_file=d.string(m, "keyFile", path),
        ca_file=d.string(m, "caFile", path),
        cert_data=_bytes(m, "certData", path),
        key_data=_bytes(m, "keyData", path),
        ca_data=_bytes(m, "caData", path),
    )


def _bytes(m: Mapping[str, Any], key: str, path: str) -> bytes:
    """A Go ``[]byte`` field: base64 text."""
    text = d.string(m, key, path)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(d.child(path, key), "must be base64 (the PEM bytes, encoded)") from None


def _check_resource_name(name: str, path: str, errs: list[ConfigError]) -> None:
    """Upstream ``validateExtendedResourceName``."""
    problems = qualified_name_problems(name)
    errs.extend(invalid(path, name, p) for p in problems)
    if not problems and not _is_extended_resource_name(name):
        errs.append(invalid(path, name, "is an invalid extended resource name"))


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_problems("requests." + name)


def ignored_resources(extenders: Sequence[Extender]) -> tuple[str, ...]:
    """The managed resources the scheduler itself ignores (``ignoredByScheduler``), in order."""
    return tuple(r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler)


def with_ignored_resources(config: SchedulerConfiguration) -> SchedulerConfiguration:
    """Upstream ``buildExtenders``: append the ``ignoredByScheduler`` resources to the
    ``ignoredResources`` of NodeResourcesFit in every profile that has its args."""
    extra = ignored_resources(config.extenders)
    if not extra:
        return config
    profiles = []
    for prof in config.profiles:
        args = prof.plugin_args.get(NODE_RESOURCES_FIT)
        if isinstance(args, NodeResourcesFitArgs):
            merged = dict(prof.plugin_args)
            merged[NODE_RESOURCES_FIT] = replace(args, ignored_resources=(*args.ignored_resources, *extra))
            prof = replace(prof, plugin_args=merged)
        profiles.append(prof)
    return replace(config, profiles=tuple(profiles))
