"""Bounded reading of files and bodies that come from users: sizes, YAML aliases, nesting, previews.

Every file ksched reads (a scheduler configuration, a cluster or pod file for ``explain``, a
workload, a kubeconfig) and every reply it parses is hostile input until checked. Three things make
a small input expensive, and each has a limit here, checked before the cost is paid:

* **size**: the file size (or body length) is compared with the limit before anything is read, so a
  50 MB configuration costs a ``stat``, not a parse;
* **YAML aliases** (a "billion laughs" document): an alias is a reference, cheap to parse but
  expanded by anything that walks the result (a message's ``repr``, a decoder). The expanded size
  is computed from the parser's events, in arithmetic, before any object is built; aliases may add
  at most :data:`MAX_ALIAS_NODES` nodes, and an alias inside its own anchor (a cycle) is refused;
* **nesting depth**: libyaml's composer recurses in C and crashes the process somewhere past
  10,000 levels; orjson refuses more than 1,024. Both YAML and JSON are held to :data:`MAX_DEPTH`.

The event scan costs about a sixth of a full load, so it runs only when a cheap upper bound on the
depth (from bracket counts and line prefixes) passes the limit or the text has an anchor or tag;
an ordinary ``kubectl get -o yaml`` file loads exactly as before.

Messages never contain the full offending value: :func:`preview` shows a bounded prefix.
"""

from __future__ import annotations

import json
import os
import re
import reprlib
from typing import Any, Final

import orjson
import yaml

_CParser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MiB: Final = 1 << 20
CONFIG_LIMIT: Final = 4 * MiB
"""A scheduler configuration: upstream's are a few KiB; 4 MiB leaves room for huge plugin args."""
OBJECT_LIMIT: Final = 4 * MiB
"""One object (a pod file for ``explain``, a workload, a template, a kubeconfig): kube-apiserver
refuses a request body over 3 MiB, so no real object is larger."""
CLUSTER_LIMIT: Final = 256 * MiB
"""A cluster file for ``explain``: a ``kubectl get -o json`` dump of tens of thousands of pods."""
REPLY_LIMIT: Final = 64 * MiB
MAX_DEPTH: Final = 1024
"""Nested lists and objects; orjson's own limit, so JSON and YAML agree."""
MAX_ALIAS_NODES: Final = 1_000_000
"""Nodes YAML aliases may add to a document (go-yaml refuses "excessive aliasing" similarly)."""
PREVIEW_CHARS: Final = 200


class LimitError(ValueError):
    """Input over one of the limits; the message names the source and the limit."""


def preview(value: object, width: int = PREVIEW_CHARS) -> str:
    """A ``repr``-like text of ``value`` of at most about ``width`` characters, built without
    walking (or printing) all of a huge value: ``'aaa…' (N more)`` for a long string."""
    if isinstance(value, str):
        if len(value) <= width:
            return repr(value)
        return f"{value[:width]!r}… ({len(value) - width:,} more)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * width:
        return f"<{value.bit_length():,}-bit integer>"  # str() of it would raise past 4,300 digits
    text = _REPR.repr(value)
    return text if len(text) <= width else f"{text[:width]}… ({len(text) - width:,} more)"


class _BoundedRepr(reprlib.Repr):
    """reprlib's element and depth caps (its ``repr`` of a 10**9-node alias tree is instant)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 4, 8, 8, 8
        self.maxstring, self.maxother, self.maxlong = PREVIEW_CHARS, PREVIEW_CHARS, PREVIEW_CHARS


_REPR: Final = _BoundedRepr()


def check_size(size: int, limit: int, source: str, what: str) -> None:
    if size > limit:
        raise LimitError(f"{source}: {size:,} bytes is over the {limit:,}-byte limit for {what}")


def read_bytes(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """The file at ``path``, refused by its size before it is read (and cut off at ``limit + 1``
    bytes for a pipe or a file that grows meanwhile). ``OSError`` passes through."""
    source = os.fspath(path)
    with open(source, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        check_size(size, limit, source, what)
        # read(n) allocates n bytes up front: ask for the file's size (0 for a pipe) plus one
        data = fh.read(size + 1)
        if len(data) > size:  # a pipe, or a file that grew since the stat
            data += fh.read(limit + 1 - len(data))
    check_size(len(data), limit, source, what)
    return data


def _surely_shallow(text: str) -> bool:
    """Whether a YAML text with no anchors and no tags is at most :data:`MAX_DEPTH` deep, by an
    upper bound: every flow level needs an opening bracket, every block level a column of line
    prefix (indentation or a ``- ``/``? ``/``: `` indicator; counted twice for compact sequences)."""
    flow = text.count("[") + text.count("{") - text.count("[]") - text.count("{}")
    room = (MAX_DEPTH - flow) // 2 - 1
    return room > 0 and re.search(rf"^[ \t?:-]{{{room},}}", text, re.MULTILINE) is None


def _scan_events(text: str | bytes, source: str) -> None:
    """Depth and alias expansion of every document, from libyaml's events (nothing is built)."""
    parser = _CParser(text)
    sizes: dict[str, tuple[int, int] | None] = {}
    stack: list[list[Any]] = [[0, 0, None]]  # per open collection: nodes, depth below, anchor
    added = 0
    while True:
        ev = parser.get_event()
        kind = type(ev)
        if kind is yaml.ScalarEvent:
            stack[-1][0] += 1
            if ev.anchor is not None:
                sizes[ev.anchor] = (1, 0)
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            if len(stack) > MAX_DEPTH:
                raise _too_deep(source, ev)
            if ev.anchor is not None:
                sizes[ev.anchor] = None
            stack.append([1, 0, ev.anchor])
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            nodes, below, anchor = stack.pop()
            if anchor is not None:
                sizes[anchor] = (nodes, below + 1)
            stack[-1][0] += nodes
            stack[-1][1] = max(stack[-1][1], below + 1)
        elif kind is yaml.AliasEvent:
            target = sizes.get(ev.anchor, (0, 0))
            if target is None:
                raise LimitError(f"{source}: YAML alias *{ev.anchor}{_at(ev)} is inside its own anchor")
            added += target[0]
            if added > MAX_ALIAS_NODES:
                raise LimitError(
                    f"{source}: YAML aliases expand to more than the {MAX_ALIAS_NODES:,}-node limit{_at(ev)}"
                )
            if len(stack) - 1 + target[1] > MAX_DEPTH:
                raise _too_deep(source, ev)
            stack[-1][0] += target[0]
            stack[-1][1] = max(stack[-1][1], target[1])
        elif kind is yaml.DocumentEndEvent:
            sizes.clear()
        elif kind is yaml.StreamEndEvent:
            return


def _at(ev: Any) -> str:
    mark = getattr(ev, "start_mark", None)
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _too_deep(source: str, ev: Any = None) -> LimitError:
    return LimitError(f"{source}: nesting is deeper than the {MAX_DEPTH:,}-level limit{_at(ev)}")


def _check_yaml(text: str | bytes, source: str) -> None:
    probe = text if isinstance(text, str) else text.decode("utf-8", "replace")
    if "&" in probe or "!" in probe or not _surely_shallow(probe):
        if _CParser is None:  # pure-Python PyYAML: its composer raises RecursionError, not a crash
            return
        _scan_events(text, source)


def load_yaml(text: str | bytes, source: str) -> Any:
    """One YAML (or JSON) document, within the depth and alias limits. ``yaml.YAMLError`` for a
    syntax error, :class:`LimitError` past a limit, ``ValueError`` for an integer too long to
    convert (Python's 4,300-digit cap) pass through."""
    _check_yaml(text, source)
    return yaml.load(text, Loader=_Loader)


def load_yaml_all(text: str | bytes, source: str) -> list[Any]:
    """Every document of a YAML stream, as :func:`load_yaml`."""
    _check_yaml(text, source)
    return list(yaml.load_all(text, Loader=_Loader))


_LONG_INT: Final = re.compile(b"[0-9]" * 19)  # unrolled: 3x faster than [0-9]{19} in re


def load_json(data: str | bytes, source: str) -> Any:
    """A JSON document, with integers exact: orjson reads integers past 64 bits as floats, so a text
    holding a 19-digit run is read again by the standard library (``-9223372036854775809`` stays an
    integer and is reported as out of range, not as a float). ``orjson.JSONDecodeError`` passes
    through for a syntax error; too deep a document is a :class:`LimitError`."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            raise _too_deep(source) from None
        raise
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_INT.search(raw) is None:
        return value
    try:
        return json.loads(raw)
    except RecursionError:
        raise _too_deep(source) from None
