"""Pod and node JSON without ``metadata.managedFields``: msgspec steps over them unread.

Every pod and node kube-apiserver sends carries its managedFields: each writer's field set, a
tree of small nested objects that in a list page or a watch event is about a third of a pod's
bytes and most of the objects orjson would build from it. The scheduler never reads them, and
kube-scheduler's informers drop them as well. msgspec, decoding into the typed shapes below,
skips every key a shape does not name without building anything for it, and builds the rest as
the plain dicts, lists, strings and numbers ``orjson.loads`` gives.

What differs from ``orjson.loads`` on a document that fits the shapes:

- ``metadata`` keeps only ObjectMeta's fields but managedFields; an object keeps only the
  top-level fields of a Pod, a Node and a ``Status`` (a watch's ERROR object); an event keeps
  ``type`` and ``object``, a list page its four fields;
- inside a skipped value msgspec checks the JSON syntax but neither the range of a number nor
  the UTF-8 of a string (kube-apiserver sends neither wrong, and a value nobody reads cannot
  mislead);
- an integer literal past 64 bits reads as an ``int``, not a float (the model's readers call
  both out of range).

A document the shapes do not fit (``metadata`` that is not an object, ``items`` that is not an
array, malformed JSON, nesting past msgspec's recursion limit) is parsed again by
``orjson.loads``, so malformed input fails with the error it always did and a misshapen object
still reaches its decoder, which names the bad field.

Only pods and nodes go through here: the other kinds the scheduler watches have top-level fields
of their own (a StorageClass's ``provisioner``, a PriorityClass's ``value``) and few objects.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec
import orjson


class _Meta(TypedDict, total=False):
    """ObjectMeta's JSON fields, all but ``managedFields``; values stay unchecked here."""

    name: Any
    generateName: Any
    namespace: Any
    selfLink: Any
    uid: Any
    resourceVersion: Any
    generation: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    deletionGracePeriodSeconds: Any
    labels: Any
    annotations: Any
    ownerReferences: Any
    finalizers: Any


class _Object(TypedDict, total=False):
    """A Pod's or a Node's top-level fields, and a ``Status``'s (a watch ERROR's object)."""

    apiVersion: Any
    kind: Any
    metadata: _Meta
    spec: Any
    status: Any
    message: Any
    reason: Any
    details: Any
    code: Any


class _List(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: Any
    items: list[_Object]


class _Event(TypedDict, total=False):
    type: Any
    object: _Object


_LIST = msgspec.json.Decoder(_List)
_EVENT = msgspec.json.Decoder(_Event)


def loads_list(raw: bytes) -> Any:
    """A ``PodList`` or ``NodeList`` page, its items without managedFields."""
    try:
        return _LIST.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return orjson.loads(raw)


def loads_event(raw: bytes) -> Any:
    """One watch event of pods or nodes, its object without managedFields."""
    try:
        return _EVENT.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return orjson.loads(raw)
