"""Review requests sent as Kubernetes protobuf, decoded into their JSON shape.

client-go's typed clients (``kubectl auth can-i``, ``kubectl auth whoami``, kube-scheduler's
delegated authorizer) post reviews as ``application/vnd.kubernetes.protobuf``: the ``k8s\\x00``
magic, then a ``runtime.Unknown`` whose field 2 holds the object. Only the review specs are
decoded (field numbers from the generated.proto files of k8s.io/api/authentication/v1 and
authorization/v1); the answer goes back as JSON, which those clients also accept.
"""

from __future__ import annotations

from typing import Any

from ksched.sim import _status as st

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

Fields = dict[int, list[Any]]

_RESOURCE_ATTRS = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}
_NON_RESOURCE_ATTRS = {1: "path", 2: "verb"}


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> Fields:
    """Field number -> values (ints for varints, bytes for length-delimited); others refused."""
    out: Fields = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            out.setdefault(num, []).append(value)
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated field")
            out.setdefault(num, []).append(buf[i : i + n])
            i += n
        else:
            raise ValueError(f"unexpected wire type {wire}")
    return out


def _strings(f: Fields, names: dict[int, str]) -> dict[str, str]:
    return {name: f[num][-1].decode() for num, name in names.items() if f.get(num)}


def _extra(entries: list[bytes]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for raw in entries:
        entry = fields(raw)
        key = entry.get(1, [b""])[-1].decode()
        values = fields(entry[2][-1]).get(1, []) if entry.get(2) else []
        out[key] = [v.decode() for v in values]
    return out


def _spec(kind: str, spec: Fields) -> dict[str, Any]:
    if kind == "TokenReview":
        out: dict[str, Any] = _strings(spec, {1: "token"})
        if spec.get(2):
            out["audiences"] = [a.decode() for a in spec[2]]
        return out
    out = {}
    if spec.get(1):
        out["resourceAttributes"] = _strings(fields(spec[1][-1]), _RESOURCE_ATTRS)
    if spec.get(2):
        out["nonResourceAttributes"] = _strings(fields(spec[2][-1]), _NON_RESOURCE_ATTRS)
    if kind == "SubjectAccessReview":
        out.update(_strings(spec, {3: "user", 6: "uid"}))
        if spec.get(4):
            out["groups"] = [g.decode() for g in spec[4]]
        if spec.get(5):
            out["extra"] = _extra(spec[5])
    return out


def decode_review(raw: bytes, kind: str) -> dict[str, Any]:
    """The JSON-shaped body (``kind`` and ``spec``) of a protobuf review request; 400 if it is not one."""
    try:
        if not raw.startswith(MAGIC):
            raise ValueError("missing the k8s protobuf magic prefix")
        unknown = fields(raw[len(MAGIC) :])
        type_meta = fields(unknown[1][-1]) if unknown.get(1) else {}
        sent_kind = type_meta.get(2, [b""])[-1].decode()
        obj = fields(unknown[2][-1]) if unknown.get(2) else {}
        spec = fields(obj[2][-1]) if obj.get(2) else {}
        return {"kind": sent_kind or kind, "spec": _spec(kind, spec)}
    except (ValueError, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise st.bad_request(f"the {kind} protobuf body could not be decoded: {exc}") from None
