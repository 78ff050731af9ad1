"""``kind: Status`` error bodies, shaped exactly like kube-apiserver's.

Handlers raise :class:`StatusError`; the dispatcher turns it into the JSON body and HTTP code, so no
handler ever builds a response for a failure by hand and no traceback ever reaches a client.
"""

from __future__ import annotations

from typing import Any

import orjson

REASONS: dict[int, str] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class StatusError(Exception):
    """An API failure with its HTTP code, reason and details; rendered as a Status object."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The ``Status`` object (a plain dict)."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def body(self) -> bytes:
        return orjson.dumps(self.status())


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``leases.coordination.k8s.io``: how upstream names a resource in messages."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """Status details as upstream serialises them (empty group omitted)."""
    d: dict[str, Any] = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = kind
    return d


def not_found(resource: str, group: str, name: str) -> StatusError:
    q = qualified(resource, group)
    return StatusError(404, f'{q} "{name}" not found', details=_details(name, group, resource))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    q = qualified(resource, group)
    return StatusError(
        409,
        f'{q} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    q = qualified(resource, group)
    return StatusError(
        409,
        f'Operation cannot be fulfilled on {q} "{name}": {why}',
        details=_details(name, group, resource),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, name: str, group: str, field: str, cause_reason: str, detail: str) -> StatusError:
    """422 Invalid with one field cause, e.g. a missing ``metadata.name``."""
    cause_msg = f"{_CAUSE_TEXT.get(cause_reason, cause_reason)}: {detail}"
    return StatusError(
        422,
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {field}: {cause_msg}',
        details={
            **_details(name, group, kind),
            "causes": [{"reason": cause_reason, "message": cause_msg, "field": field}],
        },
    )


def invalid_fields(kind: str, name: str, group: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid with every field error, as upstream's ``NewInvalid`` builds it.

    ``causes`` are (reason, field, body): ``("FieldValueRequired", "spec.capacity", "Required value")``.
    One error reads ``Kind "name" is invalid: field: body``; several are listed in brackets.
    """
    texts = [f"{field}: {body}" for _, field, body in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return StatusError(
        422,
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        details={
            **_details(name, group, kind),
            "causes": [{"reason": r, "message": body, "field": field} for r, field, body in causes],
        },
    )


_CAUSE_TEXT = {
    "FieldValueRequired": "Required value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueForbidden": "Forbidden",
}


def bad_request(message: str) -> StatusError:
    return StatusError(400, message)


def expired(message: str) -> StatusError:
    return StatusError(410, message, reason="Expired")


def success(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``status: Success`` Status, as returned by bindings and evictions."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body
