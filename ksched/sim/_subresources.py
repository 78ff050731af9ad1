"""The write subresources: ``pods/binding`` and ``pods/eviction`` (``status`` is the server's own).

Binding is the scheduler's write: it succeeds once per pod (201, sets ``spec.nodeName`` and the
PodScheduled condition) and is refused with 409 when the pod already has a node, when a
``metadata.uid`` precondition does not match, when the pod is being deleted, or when fault injection
says so. Every decision goes to the :class:`~ksched.sim.faults.AuditLog`, in commit order.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ksched.sim import _status as st
from ksched.sim._clock import rfc3339
from ksched.sim._resources import BY_KEY
from ksched.sim._selectors import match_label_selector
from ksched.sim._web import Req, json_response, read_json
from ksched.sim.faults import AuditLog, FaultInjector
from ksched.sim.store import Obj, Store

PODS = BY_KEY["pods"]


class Subresources:
    """Binding and eviction over the store, with the faults and the audit log they consult."""

    def __init__(self, store: Store, faults: FaultInjector, audit: AuditLog) -> None:
        self.store = store
        self.faults = faults
        self.audit = audit

    async def handle(self, request: web.BaseRequest, req: Req) -> web.Response:
        """POST ``pods/NAME/binding`` or ``pods/NAME/eviction``; 405 for any other verb."""
        if req.verb == "create":
            body = await read_json(request)
            if not isinstance(body, dict):
                raise st.bad_request("the request body must be a JSON object")
            if req.sub == "binding":
                return json_response(self.bind(req.namespace or "", req.name, body), 201)
            if req.sub == "eviction":
                return json_response(self.evict(req.namespace or "", req.name, body), 201)
        raise st.StatusError(
            405, f"{req.verb} is not supported on {req.fault_resource}", reason="MethodNotAllowed"
        )

    def bind(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply a Binding; returns a Success Status or raises StatusError (and audits either way)."""
        store, faults, audit = self.store, self.faults, self.audit
        target = body.get("target") or {}
        node = target.get("name") if isinstance(target, dict) else None
        if not node:
            raise st.invalid(
                "Binding", name, "", "target.name", "FieldValueRequired", "target.name is required"
            )
        want_uid = (body.get("metadata") or {}).get("uid")
        now = rfc3339(store.clock.now())
        seen_uid = [want_uid or ""]

        def assign(cur: Obj) -> Obj:
            meta, spec = cur["metadata"], cur.get("spec") or {}
            seen_uid[0] = meta.get("uid", "")
            if want_uid and want_uid != meta.get("uid"):
                raise st.conflict(
                    "pods/binding",
                    "",
                    name,
                    f"Precondition failed: UID in precondition: {want_uid}, "
                    f"UID in object meta: {meta.get('uid')}",
                )
            if spec.get("nodeName"):
                raise st.conflict(
                    "pods/binding", "", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
                )
            if meta.get("deletionTimestamp"):
                raise st.conflict(
                    "pods/binding", "", name, f"pod {name} is being deleted, cannot be assigned to a host"
                )
            if faults.conflict_binding():
                raise st.conflict("pods/binding", "", name, "injected conflict")
            status = dict(cur.get("status") or {})
            conds = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
            conds.append(
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            )
            status["conditions"] = conds
            return {**cur, "spec": {**spec, "nodeName": node}, "status": status}

        with store.lock:  # audit sequence follows commit order
            try:
                store.mutate(PODS, name, namespace, assign, subresource="binding")
            except st.StatusError as exc:
                result = (
                    "not-found"
                    if exc.code == 404
                    else ("injected-conflict" if "injected" in exc.message else "conflict")
                )
                audit.record(namespace, name, seen_uid[0], node, result, exc.code)
                raise
            audit.record(namespace, name, seen_uid[0], node, "bound", 201)
        return st.success(201)

    def evict(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """policy/v1 Eviction: delete the pod unless a matching PDB would be violated (429)."""
        store = self.store
        with store.lock:
            pod = store.get("pods", name, namespace)
            if pod is None:
                raise st.not_found("pods", "", name)
            labels = pod["metadata"].get("labels") or {}
            opts = body.get("deleteOptions") or {}
            if not pod["metadata"].get("deletionTimestamp"):
                for pdb in store.list("poddisruptionbudgets", namespace):
                    sel = (pdb.get("spec") or {}).get("selector")
                    if not match_label_selector(sel, labels):
                        continue
                    covered = [
                        p
                        for p in store.list("pods", namespace)
                        if match_label_selector(sel, p["metadata"].get("labels") or {})
                    ]
                    ok, desired, healthy = _pdb_allows(pdb, covered)
                    if not ok:
                        pdb_name = pdb["metadata"]["name"]
                        raise st.StatusError(
                            429,
                            "Cannot evict pod as it would violate the pod's disruption budget.",
                            details={
                                "causes": [
                                    {
                                        "reason": "DisruptionBudget",
                                        "message": f"The disruption budget {pdb_name} needs {desired} "
                                        f"healthy pods "
                                        f"and has {healthy} currently",
                                    }
                                ]
                            },
                            headers={"Retry-After": "10"},
                        )
            pre = opts.get("preconditions") or {}
            grace = opts.get("gracePeriodSeconds")
            store.delete(
                "pods",
                name,
                namespace,
                grace_period_s=grace,
                uid=pre.get("uid"),
                resource_version=pre.get("resourceVersion"),
            )
        return st.success(201)


def _pdb_allows(pdb: Obj, pods: list[Obj]) -> tuple[bool, int, int]:
    """(allowed, desired healthy, current healthy) for one PodDisruptionBudget."""
    spec = pdb.get("spec") or {}
    healthy = sum(
        1
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )
    total = len(pods)

    def amount(v: Any) -> int:
        if isinstance(v, str) and v.endswith("%"):
            return -(-int(v[:-1]) * total // 100)
        return int(v)

    if spec.get("minAvailable") is not None:
        desired = amount(spec["minAvailable"])
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, total - amount(spec["maxUnavailable"]))
    else:
        desired = 0
    return healthy - desired > 0, desired, healthy
