"""TokenReview, SubjectAccessReview, SelfSubjectAccessReview and SelfSubjectReview.

The create-only review APIs a delegating server (an aggregated API server, kube-scheduler's secure
port) calls: ``POST /apis/authentication.k8s.io/v1/tokenreviews`` authenticates ``spec.token``
against the static token store; ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``
evaluates ``spec.resourceAttributes`` or ``spec.nonResourceAttributes`` for ``spec.user`` /
``spec.groups`` with the same RBAC evaluator that guards the cluster's own requests. The self
variants answer for the caller. Nothing is stored; request and response shapes are upstream's.
Requests may come as JSON or (client-go's typed clients) protobuf (:mod:`ksched.sim._review_proto`);
answers are JSON.

Static tokens are audience-agnostic, so (as kube-apiserver's wrapper for such authenticators does)
a review that names audiences is authenticated only if one of them is the API server's own
audience, and ``status.audiences`` is that intersection, or the API audiences when none were named.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ksched.sim import _decode_types as decode_types
from ksched.sim import _status as st
from ksched.sim._access import Access
from ksched.sim._authn import with_authenticated
from ksched.sim._rbac import Attributes, UserInfo
from ksched.sim._review_proto import PROTOBUF, decode_review
from ksched.sim._web import Req, json_response, read_body, read_json

API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)
"""kube-apiserver's ``--api-audiences`` default under kubeadm (its service account issuer)."""
REVIEW_KEYS = frozenset(
    {
        "tokenreviews.authentication.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
        "subjectaccessreviews.authorization.k8s.io",
        "selfsubjectaccessreviews.authorization.k8s.io",
    }
)


def _reply(req: Req, body: dict[str, Any], status: dict[str, Any]) -> web.Response:
    out = {
        "kind": req.rtype.kind,
        "apiVersion": req.rtype.api_version,
        "metadata": body.get("metadata") or {},
        "spec": body.get("spec") or {},
        "status": status,
    }
    if req.rtype.key == "selfsubjectreviews.authentication.k8s.io":
        out.pop("spec")
    return json_response(out, 201)


def _invalid(kind: str, field: str, value: str, detail: str) -> st.StatusError:
    return st.invalid_fields(
        kind, "", "authorization.k8s.io", [("FieldValueInvalid", field, f"Invalid value: {value}: {detail}")]
    )


def attributes_of(kind: str, user: UserInfo, spec: dict[str, Any]) -> Attributes:
    """The request a SubjectAccessReview-like ``spec`` asks about; 422 unless exactly one of
    ``resourceAttributes`` and ``nonResourceAttributes`` is given."""
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra is not None and nra is not None:
        raise _invalid(
            kind,
            "spec.nonResourceAttributes",
            "{...}",
            "cannot be specified in combination with resourceAttributes",
        )
    if ra is None and nra is None:
        raise _invalid(
            kind,
            "spec.resourceAttributes",
            '"null"',
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )
    if nra is not None:
        return Attributes(
            user, str(nra.get("verb", "")), resource_request=False, path=str(nra.get("path", ""))
        )
    return Attributes(
        user,
        str(ra.get("verb", "")),
        True,
        str(ra.get("group", "")),
        str(ra.get("resource", "")),
        str(ra.get("subresource", "")),
        str(ra.get("namespace", "")),
        str(ra.get("name", "")),
    )


def _extra(raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple((str(k), tuple(str(v) for v in vals or ())) for k, vals in sorted(raw.items()))


class Reviews:
    """The review endpoints of one cluster, answering from its :class:`Access`."""

    def __init__(self, access: Access) -> None:
        self.access = access

    async def handle(self, request: web.BaseRequest, req: Req) -> web.Response:
        """Answer one review (201 with its ``status``); only ``create`` on the collection exists."""
        if req.verb != "create" or req.name or req.sub:
            msg = "the server does not allow this method on the requested resource"
            raise st.StatusError(405, msg, reason="MethodNotAllowed")
        if request.headers.get("Content-Type", "").startswith(PROTOBUF):
            body: Any = decode_review(await read_body(request), req.rtype.kind)
        else:
            body = await read_json(request)
        if not isinstance(body, dict):
            raise st.bad_request("the request body must be a JSON object")
        kind = body.get("kind")
        if kind and kind != req.rtype.kind:
            raise st.bad_request(
                f"the kind of the object ({kind}) does not match the resource ({req.rtype.kind})"
            )
        decode_types.check(req.rtype, body)
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise st.bad_request("spec must be an object")
        plural = req.rtype.plural
        if plural == "tokenreviews":
            return _reply(req, body, self.token_review(spec))
        if plural == "selfsubjectreviews":
            return _reply(req, body, {"userInfo": self.access.requester(request).to_json()})
        if plural == "subjectaccessreviews":
            user, groups = spec.get("user") or "", spec.get("groups") or []
            if not user and not groups:
                raise _invalid(
                    "SubjectAccessReview",
                    "spec.user",
                    '""',
                    "at least one of user or group must be specified",
                )
            who = UserInfo(
                str(user), str(spec.get("uid") or ""), tuple(map(str, groups)), _extra(spec.get("extra"))
            )
            return _reply(req, body, self.decide(attributes_of(req.rtype.kind, who, spec)))
        who = self.access.requester(request)
        return _reply(req, body, self.decide(attributes_of(req.rtype.kind, who, spec)))

    def token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        token = spec.get("token")
        if not token:
            raise st.bad_request("token is required for TokenReview in authentication")
        user = self.access.tokens.lookup(str(token))
        wanted = [str(a) for a in spec.get("audiences") or ()]
        audiences = [a for a in wanted if a in API_AUDIENCES] if wanted else list(API_AUDIENCES)
        if user is None or not audiences:
            return {
                "user": {},
                "error": "invalid bearer token"
                if user is None
                else "token audiences "
                f"{wanted!r} is invalid for the target audiences {list(API_AUDIENCES)!r}",
            }
        return {"authenticated": True, "user": with_authenticated(user).to_json(), "audiences": audiences}

    def decide(self, attrs: Attributes) -> dict[str, Any]:
        allowed, reason = self.access.authorize(attrs)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status
