"""The scheduler's writes: bindings, pod status patches, events, pod deletes and the leader Lease.

Bodies are raw JSON dicts shaped as upstream kube-scheduler writes them. All functions are coroutines
for the I/O loop and raise :mod:`ksched.errors` exceptions (see :mod:`ksched.kube.client`).

Paths come from :mod:`ksched.model.paths` (every namespace and name percent-encoded; one that cannot
be a path segment raises :class:`~ksched.model.paths.PathSegmentError` before anything is sent), and
every write to a pod carries its uid as a precondition (the binding's ``metadata.uid``, the status
patch's ``metadata.uid``, the delete's ``preconditions.uid``), as upstream's do: a pod deleted and
recreated under the same name is answered 409, never written.
"""

from __future__ import annotations

import datetime as _dt
import socket
from typing import Any

from ksched.errors import Conflict, NotFound
from ksched.kube.client import ApiClient
from ksched.model.limits import truncate_note
from ksched.model.paths import event_path, events_path, lease_path, leases_path, pod_path

DEFAULT_REPORTING_CONTROLLER = "default-scheduler"


# -- bindings ---------------------------------------------------------------------------------------
def binding_body(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    """A v1 Binding with a uid precondition (upstream DefaultBinder's body)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def bind(
    client: ApiClient, pod_ns: str, pod_name: str, pod_uid: str, node: str, *, retry: bool = True
) -> None:
    """Bind a pod to a node; raise :class:`Conflict` if the pod is bound elsewhere (or gone, or deleting).

    Safe to retry (``retry=True``, the default): the API server accepts one binding per pod and the
    body carries the pod's uid, so a repeat of a binding that was applied but whose answer was lost
    answers 409. On 409 this reads the pod back: bound to ``node`` with ``pod_uid`` means the binding
    we asked for is in place, and it returns normally; anything else re-raises the 409.
    """
    body = binding_body(pod_ns, pod_name, pod_uid, node)
    try:
        # The answer is a Status with nothing we use: decode=False spares parsing it.
        await client.post(pod_path(pod_ns, pod_name, "binding"), body, retry=retry, decode=False)
    except Conflict:
        pod = await client.get(pod_path(pod_ns, pod_name))  # NotFound if the pod is gone
        if not isinstance(pod, dict):
            raise
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if spec.get("nodeName") == node and (not pod_uid or meta.get("uid") == pod_uid):
            return
        raise


# -- pods -------------------------------------------------------------------------------------------
async def patch_pod_status(
    client: ApiClient, ns: str, name: str, patch: dict[str, Any], uid: str = ""
) -> dict[str, Any]:
    """Strategic-merge-patch ``pods/NAME/status`` (conditions merge by ``type``); returns the pod.

    ``uid`` goes in as ``metadata.uid``, a precondition (upstream's ``PatchPodStatus`` does the
    same): a pod of that name with another uid answers 409 and is left as it is.
    """
    if uid:
        patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "uid": uid}}
    result: dict[str, Any] = await client.patch(pod_path(ns, name, "status"), patch, patch_type="strategic")
    return result


async def delete_pod(client: ApiClient, ns: str, name: str, uid: str, grace: int | None = None) -> bool:
    """Delete a pod (a preemption victim) with a uid precondition; a pod already gone is fine.

    Returns False when it was already gone (404), True when this call deleted it or started its
    graceful deletion.
    """
    try:
        await client.delete(pod_path(ns, name), uid=uid or None, grace_period_s=grace)
    except NotFound:
        return False
    return True


# -- events -----------------------------------------------------------------------------------------
def micro_time(t: _dt.datetime) -> str:
    """``metav1.MicroTime`` text: RFC 3339 with microseconds, UTC."""
    return t.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    *,
    regarding: dict[str, Any],
    reason: str,
    note: str,
    action: str,
    event_type: str = "Normal",
    now: _dt.datetime,
    reporting_controller: str = DEFAULT_REPORTING_CONTROLLER,
    reporting_instance: str | None = None,
    related: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event as client-go's ``tools/events`` recorder builds it.

    ``regarding`` is an ObjectReference (``kind``, ``namespace``, ``name``, ``uid``, ``apiVersion``);
    the name is ``<regarding name>.<unix nanoseconds in hex>``; ``reportingInstance`` defaults to
    ``<controller>-<hostname>``. The scheduler writes ``Scheduled`` (action ``Binding``, Normal) and
    ``FailedScheduling`` (action ``Scheduling``, Warning). ``now`` is passed in (no clock here).
    """
    ns = regarding.get("namespace") or "default"
    nanos = int(now.timestamp() * 1_000_000) * 1000
    if reporting_instance is None:
        reporting_instance = f"{reporting_controller}-{socket.gethostname()}"
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{regarding.get('name', 'object')}.{nanos:x}", "namespace": ns},
        "eventTime": micro_time(now),
        "reportingController": reporting_controller,
        "reportingInstance": reporting_instance,
        "action": action,
        "reason": reason,
        "note": truncate_note(note),  # the API rejects notes longer than 1,024 bytes
        "type": event_type,
        "regarding": regarding,
    }
    if related is not None:
        body["related"] = related
    return body


def pod_reference(namespace: str, name: str, uid: str, resource_version: str = "") -> dict[str, Any]:
    """An ObjectReference to a pod, for ``regarding``."""
    ref = {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": name, "uid": uid}
    if resource_version:
        ref["resourceVersion"] = resource_version
    return ref


async def create_event(client: ApiClient, event: dict[str, Any], *, retry: bool = True) -> None:
    """POST an ``events.k8s.io/v1`` Event (see :func:`event_body`); a duplicate on retry is harmless.

    The answer (the Event as stored, about as long as the request) is not parsed: nothing reads it,
    and one is written for every scheduled pod.
    """
    ns = (event.get("metadata") or {}).get("namespace") or "default"
    await client.post(events_path(ns), event, retry=retry, decode=False)


async def patch_event(client: ApiClient, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Strategic-merge-patch the Event ``event`` names (client-go's ``EventSinkImpl.Patch``).

    The scheduler's patches set ``series`` to absolute values, so the client may repeat one.
    """
    meta = event.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    result: dict[str, Any] = await client.patch(event_path(ns, meta["name"]), patch, patch_type="strategic")
    return result


async def write_event(client: ApiClient, event: dict[str, Any], series_patch: dict[str, Any] | None) -> None:
    """Record an Event as client-go's ``recordEvent`` does.

    Without ``series_patch``: POST ``event``; AlreadyExists (a repeat of a POST whose answer was
    lost) is fine. With it: PATCH the series into the existing Event; if that Event is gone (404:
    expired, deleted, or its own POST not through yet) POST ``event``, which carries the series;
    if that POST finds it created meanwhile (409), PATCH once more, as upstream's retry would.
    Raises :mod:`ksched.errors` exceptions for anything else.
    """
    if series_patch is None:
        try:
            await create_event(client, event)
        except Conflict:
            return
        return
    try:
        await patch_event(client, event, series_patch)
        return
    except NotFound:
        pass
    try:
        await create_event(client, event)
    except Conflict:
        await patch_event(client, event, series_patch)


# -- leases -----------------------------------------------------------------------------------------
async def get_lease(client: ApiClient, ns: str, name: str) -> dict[str, Any] | None:
    """The Lease, or ``None`` if it does not exist."""
    try:
        lease: dict[str, Any] = await client.get(lease_path(ns, name))
    except NotFound:
        return None
    return lease


async def create_lease(client: ApiClient, ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Create the Lease; raise :class:`Conflict` (AlreadyExists) when another candidate was faster."""
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
    result: dict[str, Any] = await client.post(leases_path(ns), body)
    return result


async def update_lease(client: ApiClient, lease: dict[str, Any]) -> dict[str, Any]:
    """PUT a Lease read earlier (its ``metadata.resourceVersion`` set); :class:`Conflict` if it changed."""
    meta = lease.get("metadata") or {}
    if not meta.get("resourceVersion"):
        raise ValueError("update_lease needs the Lease's metadata.resourceVersion (optimistic concurrency)")
    ns, name = meta.get("namespace") or "default", meta["name"]
    result: dict[str, Any] = await client.put(lease_path(ns, name), lease)
    return result
