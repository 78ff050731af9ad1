"""The driver's HTTP view of the embedded cluster: admin bulk creation, the audit log, lists, churn.

Everything goes over HTTP to the ``ksched sim serve`` process: its Kubernetes API for namespaces,
churn objects and the final lists, and its ``/admin`` endpoints for bulk creation (thousands of
objects per request, which the Kubernetes API cannot do) and for the binding audit log.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from ksched.bench.errors import BenchError
from ksched.bench.workload import STORAGE_PATHS, NodeGroup
from ksched.model.paths import CORE, collection_path, name_segment


class ClusterClient:
    """The driver's HTTP view of the embedded cluster: admin bulk creation, the audit log, lists."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.s = session
        self.url = url
        self.audit_seq = 0

    async def _json(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        async with self.s.request(method, self.url + path, data=data, headers=headers) as resp:
            raw = await resp.read()
            if resp.status not in ok:
                raise BenchError(f"{method} {path}: HTTP {resp.status}: {raw[:300].decode(errors='replace')}")
            return orjson.loads(raw) if raw else None

    async def namespace(self, name: str) -> None:
        await self._json("POST", "/api/v1/namespaces", {"metadata": {"name": name}}, ok=(200, 201, 409))

    async def add_nodes(self, group: NodeGroup) -> None:
        """Deal the group's label values round-robin: one admin request per combination."""
        combos: dict[tuple[tuple[str, str], ...], int] = {}
        for i in range(group.count):
            key = tuple((k, vals[i % len(vals)]) for k, vals in group.label_values.items())
            combos[key] = combos.get(key, 0) + 1
        for key, count in combos.items():
            manifest = orjson.loads(orjson.dumps(group.manifest))
            manifest.setdefault("metadata", {}).setdefault("labels", {}).update(dict(key))
            body = {"count": count, "template": manifest, "zones": group.zones}
            await self._json("POST", "/admin/nodes", body)

    async def add_pods(self, count: int, manifest: dict[str, Any], namespace: str, prefix: str) -> None:
        body = {"count": count, "template": manifest, "namespace": namespace, "name_prefix": prefix}
        await self._json("POST", "/admin/pods", body)

    async def node_list(self) -> list[dict[str, Any]]:
        return list((await self._json("GET", "/api/v1/nodes"))["items"])

    async def pod_list(self, namespace: str) -> list[dict[str, Any]]:
        return list((await self._json("GET", collection_path(CORE, "pods", namespace)))["items"])

    async def events(self) -> list[dict[str, Any]]:
        """Every events.k8s.io/v1 Event in the cluster."""
        return list((await self._json("GET", "/apis/events.k8s.io/v1/events"))["items"])

    async def new_bindings(self) -> list[dict[str, Any]]:
        items = (await self._json("GET", f"/admin/audit?since={self.audit_seq}"))["items"]
        if items:
            self.audit_seq = int(items[-1]["seq"])
        return list(items)

    async def bulk_create(self, resource: str, items: list[dict[str, Any]], namespace: str = "") -> None:
        """Many objects of one resource in one admin request (PVs, claims, CSINodes)."""
        body = {"resource": resource, "namespace": namespace, "items": items}
        await self._json("POST", "/admin/objects", body)

    async def create_object(self, obj: dict[str, Any]) -> None:
        """One workload ``storage`` object, at its kind's path."""
        namespace = obj.get("metadata", {}).get("namespace", "default")
        path = STORAGE_PATHS[obj["kind"]].format(namespace=name_segment(namespace, "namespace"))
        await self._json("POST", path, obj)

    async def create(self, path: str, obj: dict[str, Any]) -> None:
        await self._json("POST", path, obj)

    async def delete(self, path: str) -> None:
        await self._json("DELETE", path + "?gracePeriodSeconds=0", ok=(200, 202, 404))
