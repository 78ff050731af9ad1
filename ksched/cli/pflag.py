"""A parser for Go's pflag syntax, so that kube-scheduler's argument vectors parse unchanged.

What it accepts, as pflag does: ``--name=value`` and ``--name value``; a boolean as ``--name``,
``--name=true`` or ``--name=false`` (never ``--name false``: the next word is not its value);
a single dash is a shorthand (``-v 4``, ``-v=4``, ``-v4``); ``--`` ends the flags. Lists
(``stringSlice``) are comma separated and repeatable: the first use replaces the default, later
uses append. Maps (``mapStringBool``, ``stringToString``) merge ``k=v`` pairs across uses. A
duration is Go's ``time.ParseDuration`` syntax. Errors carry pflag's wording (``unknown flag:
--x``, ``flag needs an argument: --x``, ``invalid argument "y" for "--x" flag: ...``).

It knows nothing of kube-scheduler: :mod:`ksched.cli.flags` is the table of flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.config.durations import parse_go_duration
from ksched.errors import InputError


class FlagError(InputError):
    """An argument vector is not valid: an unknown flag, a missing or malformed value."""


KINDS = (
    "bool",
    "string",
    "int",
    "int32",
    "float32",
    "duration",
    "stringSlice",
    "mapStringBool",
    "stringToString",
    "ip",
    "version",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Flag:
    """One flag: its name, value type, default (as parsed), and help."""

    name: str
    kind: str
    default: Any
    help: str
    group: str
    shorthand: str = ""
    ksched: str = ""
    """What ksched does with the flag (docs/command-line.md); "" when it is acted on as upstream."""


@dataclass(slots=True)
class Parsed:
    """Every flag's value (defaults included) and the names given on the command line."""

    values: dict[str, Any]
    changed: set[str] = field(default_factory=set)
    args: list[str] = field(default_factory=list)
    """Positional words (kube-scheduler takes none)."""

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _int(text: str, bits: int) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None


def _duration(text: str) -> float:
    try:
        return parse_go_duration(text)
    except ValueError:
        raise ValueError(f'time: invalid duration "{text}"') from None


def _pairs(text: str, flag: Flag) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(
                f"missing bool value for {key}"
                if flag.kind == "mapStringBool"
                else f"{part} must be formatted as key=value"
            )
        out[key.strip()] = value.strip()
    return out


def convert(flag: Flag, text: str, current: Any, first: bool) -> Any:
    """The flag's value after one ``Set(text)`` (``first``: the first time it is given)."""
    kind = flag.kind
    if kind in ("bool",):
        return _bool(text)
    if kind in ("string", "ip", "version"):
        return text
    if kind == "int":
        return _int(text, 64)
    if kind == "int32":
        return _int(text, 32)
    if kind == "float32":
        return _float(text)
    if kind == "duration":
        return _duration(text)
    if kind == "stringSlice":
        items = tuple(s.strip() for s in text.split(",")) if text else ()
        return items if first else (*current, *items)
    pairs = _pairs(text, flag)
    if kind == "mapStringBool":
        merged = dict(current if not first else {})
        for key, value in pairs.items():
            try:
                merged[key] = _bool(value)
            except ValueError:
                raise ValueError(f"invalid value of {key}={value}, err: {_why(value)}") from None
        return merged
    return {**(current if not first else {}), **pairs}


def _why(value: str) -> str:
    return f'strconv.ParseBool: parsing "{value}": invalid syntax'


_NO_OPT_DEFAULT = {"bool": "true", "version": "true"}
"""Kinds whose flag may stand alone (pflag's NoOptDefVal)."""


def parse(argv: Sequence[str], flags: Sequence[Flag]) -> Parsed:
    """Parse ``argv`` against ``flags``; raises :class:`FlagError` with pflag's message."""
    by_name: Mapping[str, Flag] = {f.name: f for f in flags}
    by_short: Mapping[str, Flag] = {f.shorthand: f for f in flags if f.shorthand}
    parsed = Parsed(values={f.name: f.default for f in flags})
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            parsed.args.extend(words[i:])
            break
        if not word.startswith("-") or word == "-":
            parsed.args.append(word)
            continue
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            flag = by_name.get(name)
            if flag is None or not name:
                raise FlagError(f"unknown flag: --{name}")
            shown = f"--{name}"
        else:
            body = word[1:]
            flag = by_short.get(body[:1])
            if flag is None:
                raise FlagError(f"unknown shorthand flag: {body[:1]!r} in {word}")
            rest = body[1:]
            eq, value = ("=", rest[1:]) if rest.startswith("=") else (("=", rest) if rest else ("", ""))
            shown = f"-{flag.shorthand}"
        if not eq:
            if flag.kind in _NO_OPT_DEFAULT:
                value = _NO_OPT_DEFAULT[flag.kind]
            elif i < len(words):
                value = words[i]
                i += 1
            else:
                raise FlagError(f"flag needs an argument: {shown}")
        try:
            parsed.values[flag.name] = convert(
                flag, value, parsed.values[flag.name], flag.name not in parsed.changed
            )
        except ValueError as exc:
            raise FlagError(f'invalid argument "{value}" for "{shown}" flag: {exc}') from None
        parsed.changed.add(flag.name)
    return parsed
