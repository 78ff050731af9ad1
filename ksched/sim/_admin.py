"""Admin endpoints (not part of the Kubernetes API), for tests and operators:

``GET /admin/faults``            current :class:`~ksched.sim.faults.FaultConfig` as JSON
``PUT /admin/faults``            replace it (body: the same JSON; ``{}`` turns faults off); 400 if invalid
``GET /admin/audit?since=N``     ``{"items": [BindingRecord...]}`` after sequence number N
``DELETE /admin/audit``          clear the audit log
``GET /admin/writes?since=N``    ``{"items": [WriteRecord...], "dropped": K}``: every write request
                                 after sequence number N (:mod:`ksched.sim.writes`)
``DELETE /admin/writes``         clear the write audit
``GET /admin/partitions``        ``{"partitions": [PartitionRule...]}`` in force
``PUT /admin/partitions``        ``{"partitions": [{"user_agent": "...", "mode": "blackhole"}]}``:
                                 replace the partitions only (other faults and their random
                                 sequence carry on); 400 if a rule is invalid
``DELETE /admin/partitions``     heal every partition
``GET /admin/stats``             object counts per resource, current resourceVersion, open watches
``POST /admin/nodes``            ``{"count": N, "template": {...}, "zones": Z, "name_prefix": "node-"}``
``POST /admin/pods``             ``{"count": N, "template": {...}, "namespace": "default",
                                 "name_prefix": "pod-"}``; a ``claimName`` with ``{pod}`` is per pod
``POST /admin/objects``          ``{"resource": "persistentvolumes", "namespace": "", "items": [...]}``:
                                 many objects of one kind at once, admitted as through the API
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from ksched.sim import _heap as heap
from ksched.sim import _status as st
from ksched.sim._web import error_response, json_response, read_json
from ksched.sim.faults import AuditLog, FaultConfig, FaultInjector, partitions_from_list
from ksched.sim.store import Store
from ksched.sim.workloads import make_nodes, make_pods
from ksched.sim.writes import WriteAudit


def _guarded(fn: Any) -> Any:
    """``fn`` answering a StatusError, or a bad argument, with a Status instead of a traceback."""

    async def wrapper(request: web.BaseRequest) -> web.Response:
        try:
            return await fn(request)
        except st.StatusError as exc:
            return error_response(exc)
        except (ValueError, TypeError, KeyError) as exc:
            return error_response(st.bad_request(str(exc)))

    return wrapper


def admin_routes(
    *,
    store: Store,
    faults: FaultInjector,
    audit: AuditLog,
    writes: WriteAudit,
    open_watches: Callable[[], int],
) -> dict[str, dict[str, Any]]:
    """Path -> HTTP method -> handler, for :meth:`~ksched.sim._http.ApiServer.handle`."""

    fencing = _fencing_routes(faults, writes)

    async def get_faults(request: web.BaseRequest) -> web.Response:
        return json_response(faults.config.to_dict())

    async def put_faults(request: web.BaseRequest) -> web.Response:
        body = await read_json(request)
        if not isinstance(body, dict):
            raise st.bad_request("faults must be a JSON object")
        faults.configure(FaultConfig.from_dict(body))
        return json_response(faults.config.to_dict())

    async def get_audit(request: web.BaseRequest) -> web.Response:
        since = int(request.query.get("since", "0"))
        return json_response(audit.to_json_bytes(since))

    async def delete_audit(request: web.BaseRequest) -> web.Response:
        audit.clear()
        return json_response({"items": []})

    async def stats(request: web.BaseRequest) -> web.Response:
        with store.lock:
            counts = {key: len(t.objects) for key, t in store.tables.items()}
            rv = store.rv
        return json_response({"resourceVersion": str(rv), "objects": counts, "watches": open_watches()})

    async def post_nodes(request: web.BaseRequest) -> web.Response:
        body = await read_json(request)
        nodes = make_nodes(
            int(body.get("count", 1)),
            body.get("template"),
            zones=int(body.get("zones", 0)),
            name_prefix=body.get("name_prefix", "node-"),
            start=store.count("nodes"),
        )
        n = store.bulk_create("nodes", nodes)
        heap.set_aside()
        return json_response({"created": n}, 201)

    async def post_pods(request: web.BaseRequest) -> web.Response:
        body = await read_json(request)
        ns = body.get("namespace", "default")
        pods = make_pods(
            int(body.get("count", 1)),
            body.get("template"),
            namespace=ns,
            name_prefix=body.get("name_prefix", "pod-"),
        )
        n = store.bulk_create("pods", pods, namespace=ns)
        heap.set_aside()
        return json_response({"created": n}, 201)

    async def post_objects(request: web.BaseRequest) -> web.Response:
        body = await read_json(request)
        items = body.get("items")
        if not isinstance(items, list):
            raise st.bad_request("items: expected a list of objects")
        n = store.bulk_create(str(body.get("resource", "")), items, namespace=body.get("namespace") or None)
        heap.set_aside()
        return json_response({"created": n}, 201)

    return {
        "/admin/faults": {"GET": _guarded(get_faults), "PUT": _guarded(put_faults)},
        "/admin/objects": {"POST": _guarded(post_objects)},
        "/admin/audit": {"GET": _guarded(get_audit), "DELETE": _guarded(delete_audit)},
        **{path: {m: _guarded(fn) for m, fn in methods.items()} for path, methods in fencing.items()},
        "/admin/stats": {"GET": _guarded(stats)},
        "/admin/nodes": {"POST": _guarded(post_nodes)},
        "/admin/pods": {"POST": _guarded(post_pods)},
    }


def _fencing_routes(faults: FaultInjector, writes: WriteAudit) -> dict[str, dict[str, Any]]:
    """The write audit and the partitions (what a fencing test reads and sets), unguarded."""

    async def get_writes(request: web.BaseRequest) -> web.Response:
        since = int(request.query.get("since", "0"))
        return json_response(writes.to_json_bytes(since))

    async def delete_writes(request: web.BaseRequest) -> web.Response:
        writes.clear()
        return json_response({"items": [], "dropped": 0})

    def partitions_doc() -> dict[str, Any]:
        return {"partitions": faults.config.to_dict()["partitions"]}

    async def get_partitions(request: web.BaseRequest) -> web.Response:
        return json_response(partitions_doc())

    async def put_partitions(request: web.BaseRequest) -> web.Response:
        body = await read_json(request)
        if not isinstance(body, dict) or set(body) - {"partitions"}:
            raise st.bad_request('partitions: expected {"partitions": [...]}')
        faults.set_partitions(partitions_from_list(body.get("partitions", []), "partitions"))
        return json_response(partitions_doc())

    async def delete_partitions(request: web.BaseRequest) -> web.Response:
        faults.set_partitions(())
        return json_response(partitions_doc())

    return {
        "/admin/writes": {"GET": get_writes, "DELETE": delete_writes},
        "/admin/partitions": {"GET": get_partitions, "PUT": put_partitions, "DELETE": delete_partitions},
    }
