"""Logging from kube-scheduler's log flags: ``--v``, ``--vmodule``, ``--logging-format``, split streams.

klog's V(0) messages are always shown, so every level 0-3 shows INFO (ksched logs at INFO what
kube-scheduler logs at V(0)-V(2)) and 4 or more adds DEBUG. Warnings and errors always show.
``--vmodule pattern=N`` sets the level of the loggers whose name (ksched's module path, e.g.
``ksched.scheduler.queue.scheduling_queue``) or last component matches ``pattern`` (shell-style
``*`` and ``?``, as klog's file patterns). ``json`` writes one object per line with klog's keys
``ts`` (seconds since the epoch), ``caller``, ``msg``, ``v`` (info) or ``err`` (errors).

Every record is at most :data:`~ksched.model.limits.LOG_LINE_BYTES` once formatted, traceback
included, in either format: messages are built from values a user controls (pod names, label
values, extender replies), and one hostile value must not make a megabyte line. A cut record ends
in `` ... (N more bytes)``; a cut JSON record stays one valid JSON object.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import sys
from dataclasses import dataclass

from ksched.cli.pflag import FlagError
from ksched.model.limits import LOG_LINE_BYTES, bound_text, utf8_len

DEBUG_FROM_V = 4


def level_for(v: int) -> int:
    return logging.DEBUG if v >= DEBUG_FROM_V else logging.INFO


@dataclass(frozen=True, slots=True)
class LogSettings:
    v: int = 0
    vmodule: tuple[tuple[str, int], ...] = ()
    format: str = "text"
    split_stream: bool = False


def parse_vmodule(text: str) -> tuple[tuple[str, int], ...]:
    """klog's ``pattern=N,...``; raises :class:`FlagError` naming the bad entry."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        pattern, sep, level = part.partition("=")
        if not sep or not pattern or not level.isdigit():
            raise FlagError(
                f'invalid argument "{text}" for "--vmodule" flag: expect comma-separated list '
                f"of filename=N, got {part!r}"
            )
        out.append((pattern, int(level)))
    return tuple(out)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class BoundedFormatter(logging.Formatter):
    """The text format, each record (traceback included) cut to ``limit`` bytes."""

    def __init__(self, fmt: str = TEXT_FORMAT, *, limit: int = LOG_LINE_BYTES) -> None:
        super().__init__(fmt)
        self.limit = limit

    def format(self, record: logging.LogRecord) -> str:
        return bound_text(super().format(record), self.limit)


class JsonFormatter(logging.Formatter):
    """One JSON object per line with klog's JSON keys, at most ``limit`` bytes."""

    def __init__(self, *, limit: int = LOG_LINE_BYTES) -> None:
        super().__init__()
        self.limit = limit

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": round(record.created, 6),
            "caller": f"{record.module}.py:{record.lineno}",
            "msg": record.getMessage(),
        }
        if record.levelno >= logging.ERROR:
            doc["err"] = self.formatException(record.exc_info) if record.exc_info else doc["msg"]
        else:
            doc["v"] = 0 if record.levelno >= logging.INFO else DEBUG_FROM_V
        line = json.dumps(doc, ensure_ascii=False)
        return line if len(line) * 4 <= self.limit else self._bounded(doc, line)

    def _bounded(self, doc: dict[str, object], line: str) -> str:
        """``line`` with its texts cut until it fits: escapes (a NUL is six bytes in JSON) make
        the encoded size unknown until encoded, so each round halves the texts' budget."""
        budget = self.limit
        while utf8_len(line) > self.limit and budget > 64:
            budget //= 2
            for key in ("msg", "err"):
                if isinstance(doc.get(key), str):
                    doc[key] = bound_text(str(doc[key]), budget)
            line = json.dumps(doc, ensure_ascii=False)
        return line


class _Below(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def configure(settings: LogSettings) -> None:
    """Install the handlers and levels (the only place logging is configured for ``run``)."""
    formatter: logging.Formatter = JsonFormatter() if settings.format == "json" else BoundedFormatter()
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    err = logging.StreamHandler(sys.stderr)
    err.setFormatter(formatter)
    if settings.split_stream:
        out = logging.StreamHandler(sys.stdout)
        out.setFormatter(formatter)
        out.addFilter(_Below(logging.ERROR))
        err.setLevel(logging.ERROR)
        root.addHandler(out)
    root.addHandler(err)
    root.setLevel(level_for(settings.v))
    for name in _loggers():
        for pattern, level in settings.vmodule:
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name.rsplit(".", 1)[-1], pattern):
                logging.getLogger(name).setLevel(level_for(level))
                break
    if settings.vmodule:
        _VModule.install(settings.vmodule)


def _loggers() -> list[str]:
    return [n for n in logging.root.manager.loggerDict if n.startswith("ksched")]


class _VModule:
    """Loggers created after start-up (modules imported later) get their --vmodule level too."""

    @staticmethod
    def install(rules: tuple[tuple[str, int], ...]) -> None:
        previous = logging.getLoggerClass()

        class VModuleLogger(previous):  # type: ignore[misc, valid-type]
            def __init__(self, name: str, level: int = logging.NOTSET) -> None:
                super().__init__(name, level)
                for pattern, v in rules:
                    if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(
                        name.rsplit(".", 1)[-1], pattern
                    ):
                        self.setLevel(level_for(v))
                        break

        logging.setLoggerClass(VModuleLogger)
