"""Kubernetes API paths built from object names: the one place a name or a namespace enters a URL.

Why one place: a name is data from the cluster, and a path built by pasting it in is a different
path as soon as the name holds a character the URL grammar gives a meaning to. A binding for pod
``tw\\nin`` pasted into a URL reaches pod ``twin``; ``twin?x`` is cut at the ``?``; ``a/binding``
adds a segment. Every writer (and the bind worker, the volume binder's PreBind, the benchmark's
driver) builds its paths with these functions, so every request names exactly the object meant.

What each function does, as client-go's ``rest.Request`` does:

- a namespace or name that is not a valid path segment (empty, ``.``, ``..``, or holding ``/`` or
  ``%``, upstream's ``IsValidPathSegmentName``) is refused with :class:`PathSegmentError` before
  any request is built, with client-go's message (``invalid resource name "a/b": [may not contain
  '/']``); no such object can exist in a real cluster, so nothing is lost;
- every other segment is percent-encoded as Go's ``url.URL`` encodes a path: everything but the
  unreserved characters (``A-Z a-z 0-9 - . _ ~``) becomes ``%XX`` of its UTF-8 bytes, so ``?``,
  ``#``, spaces, control characters (newline, NUL) and non-ASCII letters all travel as escapes.
  (Go leaves a few sub-delimiters such as ``:`` and ``@`` literal; encoding them too names the
  same object, since the server decodes the path before splitting it.)

The result is an *encoded* path: :class:`ksched.kube.client.ApiClient` sends it exactly as given,
and the API server decodes it and splits the decoded path at ``/`` (kube-apiserver's
RequestInfoFactory), which is why a name may not hold ``/``.

Cost: a plain DNS-1123 name (every name a real cluster serves) is checked by one precompiled
``fullmatch`` and used as is; only the rare odd name pays for :func:`urllib.parse.quote`. A binding
path is built per pod, at thousands of pods per second.
"""

from __future__ import annotations

import json
import re
from typing import Final
from urllib.parse import quote

from ksched.errors import InputError

CORE: Final = "/api/v1"
"""The core group's prefix (pods, nodes, PVs, PVCs, configmaps, namespaces)."""
COORDINATION: Final = "/apis/coordination.k8s.io/v1"
EVENTS: Final = "/apis/events.k8s.io/v1"

_PLAIN: Final = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*").fullmatch
"""Segments that need no escaping: unreserved characters only, not starting with a dot (so never
``.`` or ``..``, which a URL normaliser would take as dot segments)."""

NAME_MAY_NOT_BE: Final = (".", "..")
NAME_MAY_NOT_CONTAIN: Final = ("/", "%")


class PathSegmentError(InputError):
    """A namespace or name cannot be sent as a path segment (client-go refuses it the same way);
    nothing was sent."""


def path_segment_problems(name: str) -> list[str]:
    """Upstream's ``IsValidPathSegmentName``: why ``name`` cannot be a path segment (empty if it can)."""
    if name in NAME_MAY_NOT_BE:
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in NAME_MAY_NOT_CONTAIN if bad in name]


def go_quote(s: str) -> str:
    """Go's ``%q`` of a string, near enough for messages (printable Unicode kept, controls escaped)."""
    return json.dumps(s, ensure_ascii=False)


def escape(segment: str) -> str:
    """Percent-encode one path segment: everything but the unreserved characters becomes ``%XX``
    (UTF-8), and a segment of dots alone becomes ``%2E``s so no normaliser removes it.

    This encodes anything, ``/`` and ``%`` included; :func:`name_segment` is what the paths use.
    """
    if _PLAIN(segment) is not None:
        return segment
    if segment and not segment.strip("."):
        return "%2E" * len(segment)
    return quote(segment, safe="")


def name_segment(value: str, what: str = "resource name") -> str:
    """``value`` as a path segment, refused (:class:`PathSegmentError`) as client-go refuses it.

    ``what`` names it in the message: ``resource name``, ``namespace`` or ``subresource``.
    """
    if _PLAIN(value) is not None:
        return value
    if not value:
        raise PathSegmentError(f"{what} may not be empty")
    problems = path_segment_problems(value)
    if problems:
        raise PathSegmentError(f"invalid {what} {go_quote(value)}: [{' '.join(problems)}]")
    return quote(value, safe="")


_KNOWN: dict[str, str] = {}
"""Namespaces and subresources seen before, with their segments: few, and met on every write."""


def _known(value: str, what: str) -> str:
    """A namespace's or subresource's segment, from :data:`_KNOWN` when it was seen before."""
    seg = _KNOWN.get(value)
    if seg is None:
        seg = name_segment(value, what)
        if len(_KNOWN) >= 1024:  # bounded: a churn of namespaces must not grow it without end
            _KNOWN.clear()
        _KNOWN[value] = seg
    return seg


def collection_path(prefix: str, resource: str, namespace: str | None = None) -> str:
    """``PREFIX[/namespaces/NS]/RESOURCE``; ``namespace=None`` for a cluster-scoped resource."""
    if namespace is None:
        return f"{prefix}/{resource}"
    if not namespace:
        raise PathSegmentError("an empty namespace may not be set during creation")
    return f"{prefix}/namespaces/{_known(namespace, 'namespace')}/{resource}"


def object_path(prefix: str, resource: str, name: str, namespace: str | None = None, sub: str = "") -> str:
    """``PREFIX[/namespaces/NS]/RESOURCE/NAME[/SUB]``: one object, or one of its subresources."""
    seg = name if _PLAIN(name) is not None else name_segment(name)
    if namespace is None:
        base = f"{prefix}/{resource}/{seg}"
    elif not namespace:
        raise PathSegmentError("an empty namespace may not be set when a resource name is provided")
    else:
        base = f"{prefix}/namespaces/{_known(namespace, 'namespace')}/{resource}/{seg}"
    return f"{base}/{_known(sub, 'subresource')}" if sub else base


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    """A pod (``sub``: ``binding``, ``status``, ``eviction``); :func:`object_path` written out,
    since a binding, a status patch or both are built for every pod scheduled."""
    ns = _KNOWN.get(namespace) if namespace else None
    if ns is None:
        if not namespace:
            raise PathSegmentError("an empty namespace may not be set when a resource name is provided")
        ns = _known(namespace, "namespace")
    seg = name if _PLAIN(name) is not None else name_segment(name)
    if not sub:
        return f"/api/v1/namespaces/{ns}/pods/{seg}"
    return f"/api/v1/namespaces/{ns}/pods/{seg}/{_KNOWN.get(sub) or _known(sub, 'subresource')}"


def leases_path(namespace: str) -> str:
    """A namespace's ``coordination.k8s.io/v1`` Lease collection (a Lease is created here)."""
    return collection_path(COORDINATION, "leases", namespace)


def lease_path(namespace: str, name: str) -> str:
    """A ``coordination.k8s.io/v1`` Lease (leader election's lock)."""
    return object_path(COORDINATION, "leases", name, namespace)


def events_path(namespace: str) -> str:
    """A namespace's ``events.k8s.io/v1`` Event collection (an Event is created here)."""
    return collection_path(EVENTS, "events", namespace)


def event_path(namespace: str, name: str) -> str:
    """An ``events.k8s.io/v1`` Event (a series is patched into it)."""
    return object_path(EVENTS, "events", name, namespace)


def pv_path(name: str) -> str:
    """A PersistentVolume (cluster-scoped)."""
    return object_path(CORE, "persistentvolumes", name)


def pvc_path(namespace: str, name: str) -> str:
    """A PersistentVolumeClaim."""
    return object_path(CORE, "persistentvolumeclaims", name, namespace)


def node_path(name: str) -> str:
    """A Node (cluster-scoped)."""
    return object_path(CORE, "nodes", name)
