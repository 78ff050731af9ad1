"""What an :class:`~ksched.kube.informer.Informer` tells its consumer.

Every event is a frozen dataclass handed to the informer's ``sink`` on the I/O thread, in the order
the API server produced them for that resource. ``kind`` is the informer's resource (``"pods"``,
``"nodes"``, ``"namespaces"``, ``"poddisruptionbudgets"``); ``obj`` is the decoded model record.

One informer emits, over its life::

    (Upserted | Invalid)* Synced                       the first list, one event per object
    (Upserted | Deleted | Invalid)*                    the watch, resumed across dropped streams
    Relisted                                           after 410 Gone: the full current state
    (Upserted | Deleted | Invalid)*                    ...

How to consume :class:`Relisted`: the objects of that kind the consumer knows and that are neither in
``objs`` nor in ``invalid`` were deleted while the informer could not see them; everything in ``objs``
is the current version (an add or an update). Entries of ``invalid`` are objects that exist but could
not be decoded; the consumer decides what to do with them exactly as for a single :class:`Invalid`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError


@dataclass(frozen=True, slots=True)
class Upserted:
    """An object was added or changed (``event_type`` is ``ADDED`` or ``MODIFIED``)."""

    kind: str
    obj: Any
    event_type: str = "ADDED"


@dataclass(frozen=True, slots=True)
class Deleted:
    """An object was deleted; ``obj`` is its last state as the server sent it."""

    kind: str
    obj: Any


@dataclass(frozen=True, slots=True)
class Invalid:
    """An object whose JSON the decoder refused; the informer carries on.

    ``raw_node_name`` and ``raw_scheduler_name`` are ``spec.nodeName`` / ``spec.schedulerName`` of a
    pod when they are strings (else ``""``), so the consumer can tell whether a pending pod of its own
    profiles is stuck. ``event_type`` is the watch event type (``ADDED``, ``MODIFIED``, ``DELETED``) or
    ``LIST`` when the object came from a list; an invalid ``DELETED`` object is still gone.
    """

    kind: str
    namespace: str
    name: str
    uid: str
    error: ObjectError
    raw_node_name: str = ""
    raw_scheduler_name: str = ""
    event_type: str = "LIST"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Relisted:
    """After 410 Gone the informer listed again: ``objs`` is every valid object that exists now."""

    kind: str
    objs: tuple[Any, ...]
    invalid: tuple[Invalid, ...] = ()
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class Synced:
    """The first list has been delivered; the consumer's view of ``kind`` is complete."""

    kind: str


InformerEvent = Upserted | Deleted | Invalid | Relisted | Synced
