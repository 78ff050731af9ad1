"""Shape rules the framework's readers rely on, checked on the source itself.

- No function in ``ksched/framework`` is longer than :data:`MAX_FUNCTION_LINES`: a reader finds
  "where does Score happen" in one jump, and each runner fits on a screen.
- No module reaches into another module's objects' ``_private`` attributes: collaborators get a
  small public method or are passed in explicitly. A module may touch the underscored attributes
  its own classes define (on ``self``, or on another object of the same module).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "ksched"
MAX_FUNCTION_LINES = 80
NAMEDTUPLE_API = frozenset({"_make", "_replace", "_asdict", "_fields", "_field_defaults"})
"""``collections.namedtuple``'s public methods, underscored only to keep clear of field names."""


def _modules(under: Path) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if "_fast" not in p.parts)


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return out


def _own_private_names(tree: ast.Module) -> set[str]:
    """The underscored attributes and methods the module's own classes define: a module may touch
    those on any of its objects (a handle reading the overlay that made it)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return {n for n in names if n.startswith("_")}


def _private_reaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    own = _own_private_names(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if attr in NAMEDTUPLE_API or attr in own:
            continue
        out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {ast.unparse(node)}")
    return out


def test_no_framework_function_is_longer_than_a_screen() -> None:
    found = [hit for p in _modules(ROOT / "framework") for hit in _long_functions(p)]
    assert not found, "split these into smaller functions:\n" + "\n".join(found)


@pytest.mark.parametrize("package", ["framework", "scheduler", "cache", "kube", "sim", "config", "model"])
def test_no_module_touches_another_objects_private_attributes(package: str) -> None:
    found = [hit for p in _modules(ROOT / package) for hit in _private_reaches(p)]
    assert not found, "give the collaborator a public method instead:\n" + "\n".join(found)


def test_top_level_modules_do_not_touch_private_attributes() -> None:
    found = [hit for p in sorted(ROOT.glob("*.py")) for hit in _private_reaches(p)]
    assert not found, "give the collaborator a public method instead:\n" + "\n".join(found)
