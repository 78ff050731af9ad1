"""How long a text ksched writes may be: event notes, condition messages, log lines, error texts.

Why here: every layer writes text built from values a user controls (pod names, label values,
plugin reasons, extender replies), and every layer may import :mod:`ksched.model`. One module holds
the bounds and the two ways of cutting, so that no writer invents its own.

- :data:`NOTE_BYTES` (1,024): upstream's event note limit; :func:`truncate_note` is client-go's
  ``truncateMessage`` (cut ones end in `` ...``).
- :data:`CONDITION_MESSAGE_BYTES` (32 KiB): upstream sets no bound on a condition's message, but a
  status patch that does not fit kube-apiserver's request limit (about 1.5 MB) fails, and a message
  that size reaches every watcher of the pod. 32 KiB keeps every message a real FitError produces
  whole (5,000 nodes grouped by reason stay far below it), yet keeps a pod's status small.
- :data:`LOG_LINE_BYTES` (16 KiB): one log record, traceback included, so that no line built from a
  hostile value floods a log pipeline (most collectors split or drop lines past 16 KiB).
- :data:`ERROR_TEXT_BYTES` (4 KiB): an exception text ksched builds from a value it refused.

:func:`bound_text` cuts on a UTF-8 character boundary and says how much it cut:
``<prefix> ... (N more bytes)``; the result, marker included, is at most the bound.
"""

from __future__ import annotations

from typing import Final

NOTE_BYTES: Final = 1024
CONDITION_MESSAGE_BYTES: Final = 32 * 1024
LOG_LINE_BYTES: Final = 16 * 1024
ERROR_TEXT_BYTES: Final = 4 * 1024

NOTE_SUFFIX: Final = " ..."
_UTF8_MAX: Final = 4
"""No character takes more than 4 bytes in UTF-8: a text of n characters has at most 4n bytes."""


def truncate_note(message: str, limit: int = NOTE_BYTES) -> str:
    """client-go's ``truncateMessage``: at most ``limit`` bytes, cut ones ending in `` ...``."""
    if len(message) * _UTF8_MAX <= limit:  # the common case: no encoding at all
        return message
    raw = message.encode(errors="surrogatepass")
    if len(raw) <= limit:
        return message
    return _prefix(raw, limit - len(NOTE_SUFFIX)) + NOTE_SUFFIX


def bound_text(text: str, limit: int) -> str:
    """``text`` when it fits in ``limit`` UTF-8 bytes; else its longest prefix that fits with the
    marker `` ... (N more bytes)`` (N counts the bytes left out), cut between characters."""
    if len(text) * _UTF8_MAX <= limit:
        return text
    raw = text.encode(errors="surrogatepass")
    if len(raw) <= limit:
        return text
    # The marker's length depends on N, which depends on the cut: size it for the largest N.
    room = limit - len(_marker(len(raw)))
    head = _prefix(raw, max(room, 0))
    return head + _marker(len(raw) - len(head.encode(errors="surrogatepass")))


def utf8_len(text: str) -> int:
    """Bytes ``text`` takes in UTF-8 (what the bounds count)."""
    return len(text.encode(errors="surrogatepass"))


def _marker(cut: int) -> str:
    return f" ... ({cut} more bytes)"


def _prefix(raw: bytes, size: int) -> str:
    """The longest whole-character prefix of UTF-8 ``raw`` within ``size`` bytes."""
    return raw[:size].decode(errors="ignore")
