"""Server-side printing: ``meta.k8s.io/v1`` Table responses, so ``kubectl get`` shows real columns.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and falls back to plain lists
(printing only NAME and AGE); for the resources a scheduler operator looks at (nodes, pods, events,
leases, PDBs, and the storage kinds: PVs, PVCs, StorageClasses, CSI objects) we answer with the same
columns kube-apiserver v1.35 prints. ``includeObject`` is honoured (None, Metadata (default), Object).
Rows are printed from the stored shape, so core/v1 and events.k8s.io/v1 Events share one printer
(as upstream, whose printers work on the internal type); an included object is in the request's version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.sim._clock import age
from ksched.sim._resources import ResourceType
from ksched.sim._tables_storage import STORAGE_TABLES
from ksched.sim.store import Entry, Obj

Cell = Any


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _age(o: Obj, now: float) -> str:
    return age(o["metadata"].get("creationTimestamp"), now)


def _node_row(o: Obj, now: float) -> list[Cell]:
    st = o.get("status") or {}
    ready = next((c.get("status") for c in st.get("conditions") or () if c.get("type") == "Ready"), None)
    status = {"True": "Ready", "False": "NotReady"}.get(ready or "", "Unknown")
    if (o.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = (
        ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")))
        or "<none>"
    )
    info = st.get("nodeInfo") or {}
    addr = {a.get("type"): a.get("address") for a in st.get("addresses") or ()}
    return [
        o["metadata"]["name"],
        status,
        roles,
        _age(o, now),
        info.get("kubeletVersion", ""),
        addr.get("InternalIP", "<none>"),
        addr.get("ExternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


def _pod_row(o: Obj, now: float) -> list[Cell]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    cs = st.get("containerStatuses") or ()
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in cs)
    reason = st.get("reason") or st.get("phase") or "Unknown"
    if o["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return [
        o["metadata"]["name"],
        f"{ready}/{len(spec.get('containers') or ())}",
        reason,
        restarts,
        _age(o, now),
        st.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _lease_row(o: Obj, now: float) -> list[Cell]:
    return [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""), _age(o, now)]


def _ago(ts: str | None, now: float) -> str:
    return age(ts, now) if ts else "<unknown>"


def _event_row(o: Obj, now: float) -> list[Cell]:
    """Upstream's ``printEvent`` (always wide; kubectl hides priority-1 columns) on a stored core Event.

    First seen is ``firstTimestamp`` or ``eventTime``; last seen ``series.lastObservedTime``, else
    ``lastTimestamp``, else first seen; the count is ``series.count``, else ``count``, else 1. Events
    with no timestamps at all fall back to ``creationTimestamp`` rather than ``<unknown>``.
    """
    inv = o.get("involvedObject") or {}
    source = o.get("source") or {}
    series = o.get("series") or {}
    first_ts = o.get("firstTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    first = _ago(first_ts, now)
    last = _ago(o["lastTimestamp"], now) if o.get("lastTimestamp") else first
    count = int(o.get("count") or 0) or 1
    if series:
        last = _ago(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    kind = (inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    component = source.get("component") or o.get("reportingComponent") or ""
    instance = source.get("host") or o.get("reportingInstance") or ""
    return [
        last,
        o.get("type", ""),
        o.get("reason", ""),
        target,
        inv.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        (o.get("message") or "").strip(),
        first,
        count,
        o["metadata"]["name"],
    ]


def _ns_row(o: Obj, now: float) -> list[Cell]:
    return [o["metadata"]["name"], (o.get("status") or {}).get("phase", ""), _age(o, now)]


def _pdb_row(o: Obj, now: float) -> list[Cell]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    return [
        o["metadata"]["name"],
        str(spec.get("minAvailable", "N/A")),
        str(spec.get("maxUnavailable", "N/A")),
        st.get("disruptionsAllowed", 0),
        _age(o, now),
    ]


def _cols(*specs: tuple[str, str, int]) -> list[dict[str, Any]]:
    return [
        {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
        for n, t, p in specs
    ]


TABLES: dict[str, tuple[list[dict[str, Any]], Callable[[Obj, float], list[Cell]]]] = {
    "nodes": (
        _cols(
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ),
        _node_row,
    ),
    "pods": (
        _cols(
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ),
        _pod_row,
    ),
    "leases.coordination.k8s.io": (
        _cols(("Name", "string", 0), ("Holder", "string", 0), ("Age", "string", 0)),
        _lease_row,
    ),
    "events": (  # both core/v1 and events.k8s.io/v1 (one stored resource)
        _cols(
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        ),
        _event_row,
    ),
    "namespaces": (_cols(("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)), _ns_row),
    "poddisruptionbudgets.policy": (
        _cols(
            ("Name", "string", 0),
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            ("Age", "string", 0),
        ),
        _pdb_row,
    ),
}
TABLES.update({key: (_cols(*specs), row) for key, (specs, row) in STORAGE_TABLES.items()})


def table(
    rtype: ResourceType, entries: list[Entry], rv: int, now: float, include: str, meta_extra: dict[str, Any]
) -> dict[str, Any] | None:
    """A Table for ``entries`` of ``rtype``, or ``None`` if we have no printer for it."""
    spec = TABLES.get(rtype.storage_key)
    if spec is None:
        return None
    cols, row = spec
    rows = []
    for e in entries:
        r: dict[str, Any] = {"cells": row(e.obj, now)}
        if include == "Object":
            r["object"] = e.view(rtype)
        elif include != "None":
            r["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": e.obj["metadata"],
            }
        rows.append(r)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv), **meta_extra},
        "columnDefinitions": cols,
        "rows": rows,
    }
