"""Generators for tests/corpus/bombs.yaml and numbers.yaml: each recipe becomes a file at test time,
so nothing big is committed (the oversized files are sparse: a size, no disk blocks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).resolve().parent / "corpus"
CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
POD_HEAD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\n"


CONFIG_BASE: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "s",
            "plugins": {"score": {"enabled": [{"name": "ImageLocality"}]}},
            "pluginConfig": [{"name": "InterPodAffinity", "args": {}}],
        }
    ],
    "extenders": [{"urlPrefix": "http://127.0.0.1:1", "prioritizeVerb": "p", "weight": 1}],
}


def put(doc: Any, path: str, value: object) -> None:
    """Set ``value`` at a dotted path with ``[i]`` list indexes (numbers.yaml's ``path``)."""
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    for key in keys[:-1]:
        doc = doc[key]
    doc[keys[-1]] = value


POD_BASE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}
"""The minimal pod numbers.yaml's ``pod`` entries put their value into."""


def recipes(name: str) -> Any:
    return yaml.safe_load((CORPUS / name).read_text())


def _laughs(levels: int, width: int) -> tuple[str, str]:
    """Anchor lines (top-level keys ``l0`` .. ``lN``) and the alias of the last one."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines), f"*l{levels - 1}"


def _body(kind: str, params: dict[str, Any]) -> str:
    """The offending value as YAML text for a ``value:`` key (deep_block: an indented block)."""
    if kind == "deep_flow":
        return "[" * params["depth"] + "]" * params["depth"]
    if kind == "deep_block":  # compact nested block sequences: "- - - x", two columns a level
        return "\n  " + "- " * params["depth"] + "x"
    raise ValueError(kind)


def generate(recipe: dict[str, Any], tmp: Path) -> Path:
    """The file for one bombs.yaml recipe, in ``tmp``."""
    kind, params, where = recipe["kind"], recipe["params"], recipe["where"]
    path = tmp / f"{recipe['name']}.{'json' if kind == 'deep_json' else 'yaml'}"
    if kind == "oversized":
        with open(path, "wb") as fh:
            fh.write(CONFIG_HEAD.encode())
            fh.truncate(params["bytes"])
        return path
    if kind == "deep_json":
        d = params["depth"]
        path.write_text('{"kind": "List", "items": ' + "[" * d + "]" * d + "}")
        return path
    anchors, value = "", ""
    if kind == "billion_laughs":
        anchors, value = _laughs(params["levels"], params["width"])
    elif kind == "recursive_alias":
        value = "&r [*r]"
    else:
        value = _body(kind, params)
    # Anchors go in a leading top-level key, so that they are defined before the alias that uses them.
    prefix = "x:\n  " + anchors.replace("\n", "\n  ") + "\n" if anchors else ""
    if where == "config":
        text = f"{prefix}{CONFIG_HEAD}profiles:\n- schedulerName: {value}\n"
    elif where == "pod":
        text = f"{prefix}{POD_HEAD}  labels:\n    a: {value}\n"
    else:
        node = "- kind: Node\n  metadata:\n    name: n\n    labels:\n"
        text = f"{prefix}apiVersion: v1\nkind: List\nitems:\n{node}      a: {value}\n"
    path.write_text(text)
    return path
