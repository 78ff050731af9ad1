"""The import-linter contracts in pyproject.toml cover every top-level module of ksched.

``lint-imports`` checks only what a contract names: a new ``ksched/foo.py`` that no contract mentions
may import anything and be imported by anything, silently. These tests make adding one a decision —
place it in the layers or give it its own contract — and keep the "sees only X" lists complete, so
that a new module is forbidden to the leaves (kube, sim, metrics, manifests) until someone says
otherwise. They read the configuration only; ``lint-imports`` (run in CI) checks the code against it.
"""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import ksched

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

ONLY: dict[str, frozenset[str]] = {
    "kube sees only model and errors": frozenset({"ksched.model", "ksched.errors", "ksched.bounded"}),
    "sim sees only model and errors": frozenset({"ksched.model", "ksched.errors", "ksched.bounded"}),
    "metrics is a leaf": frozenset(),
    "manifests reads files and sees only errors": frozenset({"ksched.errors", "ksched.bounded"}),
}
"""Contract name -> the top-level modules its source may import; every other one must be forbidden."""


def contracts() -> list[dict[str, Any]]:
    config = tomllib.loads(PYPROJECT.read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def top_level_modules() -> set[str]:
    """``ksched.X`` for every module and package directly under ``ksched/`` (``__main__`` included)."""
    return {f"ksched.{m.name}" for m in pkgutil.iter_modules(ksched.__path__)}


def named_modules(contract: dict[str, Any]) -> set[str]:
    """Every module expression a contract names, layers split on ``|`` and ``:``."""
    out: set[str] = set()
    for key in ("source_modules", "forbidden_modules", "protected_modules", "allowed_importers", "modules"):
        out.update(contract.get(key, ()))
    for layer in contract.get("layers", ()):
        out.update(part.strip() for part in layer.replace(":", "|").split("|"))
    return out


def test_every_top_level_module_is_named_by_a_contract() -> None:
    named = set().union(*(named_modules(c) for c in contracts()))
    missing = sorted(top_level_modules() - named)
    assert not missing, (
        f"{missing} are in no import-linter contract: add them to the layers or give them a contract "
        f"in [tool.importlinter] of {PYPROJECT.name} (DESIGN.md §7 says where they belong)"
    )


@pytest.mark.parametrize("name", sorted(ONLY), ids=sorted(ONLY))
def test_a_leaf_contract_forbids_every_other_module(name: str) -> None:
    (contract,) = [c for c in contracts() if c["name"] == name]
    sources = set(contract["source_modules"])
    expected = top_level_modules() - sources - ONLY[name]
    forbidden = set(contract["forbidden_modules"])
    assert forbidden == expected, (
        f"contract {name!r}: add {sorted(expected - forbidden)} to forbidden_modules, "
        f"drop {sorted(forbidden - expected)}"
    )


def test_fast_has_one_explicit_allow_list() -> None:
    """Who may import the compiled kernels is a list in one contract, not whoever happens to."""
    (contract,) = [c for c in contracts() if "ksched._fast" in c.get("protected_modules", ())]
    assert contract["allowed_importers"] == ["ksched.framework.kernels"]
