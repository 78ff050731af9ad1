"""A small scheduler extender over HTTP, for trying ksched's (and kube-scheduler's) extender support.

    python examples/extender/server.py --port 8888 --mode filter,prioritize \
        --filter-label extender=yes --score-label extender-score

Verbs (POST, JSON in the ``k8s.io/kube-scheduler/extender/v1`` format, see docs/extenders.md):

- ``/filter``: nodes pass when they carry ``--filter-label KEY=VALUE`` (or the annotation
  ``--filter-annotation KEY=VALUE``, read from the Node objects sent); the others are reported in
  ``FailedNodes`` (``FailedAndUnresolvableNodes`` with ``--unresolvable``).
- ``/prioritize``: each node scores the integer value of its ``--score-label`` label, 0..10.
- ``/bind``: posts the binding to the API server at ``--api`` itself, as a binder extender does.
- ``/preempt``: passes the candidates through as ``NodeNameToMetaVictims``, keeping only the nodes of
  ``--preempt-nodes`` when given.

A node-cache-capable scheduler sends node names only; the server then reads the nodes' labels from
its own cache of ``--api``'s nodes (a list, then a watch). ``--fault`` makes every answer misbehave
(``bad-json``, ``unknown-node``, ``huge``: a 20 MB body, ``slow``: ``--slow-s`` seconds late,
``500``), for testing a scheduler's error handling.
``GET /stats`` returns how many calls each verb got. ``--tls-cert`` / ``--tls-key`` serve HTTPS.
It listens on 127.0.0.1 unless told otherwise and prints ``listening on http(s)://HOST:PORT`` once
it does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl
import sys
from collections import Counter
from typing import Any

import orjson
from aiohttp import ClientSession, web

VERBS = ("filter", "prioritize", "bind", "preempt")
FAULTS = ("none", "bad-json", "unknown-node", "huge", "slow", "500")


def _get(obj: dict[str, Any] | None, key: str) -> Any:
    """A field by its Go name, matched case-insensitively as Go's decoder does."""
    if not obj:
        return None
    if key in obj:
        return obj[key]
    return next((v for k, v in obj.items() if k.lower() == key.lower()), None)


class NodeCache:
    """The nodes' labels, kept by a list and then a watch of the API server, as a node-cache-capable
    extender keeps its own cache. A name it does not know yet (a node the scheduler saw first)
    triggers a fresh list."""

    def __init__(self, session: ClientSession, api: str) -> None:
        self.session, self.api = session, api
        self.by_name: dict[str, dict[str, str]] = {}
        self.resource_version = ""
        self.task: asyncio.Task[None] | None = None

    async def relist(self) -> None:
        async with self.session.get(f"{self.api}/api/v1/nodes") as resp:
            doc = await resp.json()
        self.by_name = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in doc.get("items") or []
        }
        self.resource_version = doc.get("metadata", {}).get("resourceVersion", "")

    async def watch(self) -> None:
        """Follow the watch stream; relist and start over when it ends or fails."""
        while True:
            try:
                await self.relist()
                url = f"{self.api}/api/v1/nodes?watch=1&resourceVersion={self.resource_version}"
                async with self.session.get(url, timeout=None) as resp:
                    async for line in resp.content:
                        self.apply(orjson.loads(line))
            except (TimeoutError, OSError, ValueError):
                await asyncio.sleep(1.0)

    def apply(self, event: dict[str, Any]) -> None:
        meta = event.get("object", {}).get("metadata", {})
        if event.get("type") == "DELETED":
            self.by_name.pop(meta.get("name", ""), None)
        elif event.get("type") in ("ADDED", "MODIFIED"):
            self.by_name[meta["name"]] = meta.get("labels") or {}

    async def labels(self, names: list[str]) -> dict[str, dict[str, str]]:
        if any(name not in self.by_name for name in names):
            await self.relist()
        return {name: self.by_name.get(name, {}) for name in names}


class Extender:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.modes = set(opts.mode.split(",")) if opts.mode else set()
        self.stats: Counter[str] = Counter()
        self.session: ClientSession | None = None
        self.nodes: NodeCache | None = None
        key, _, value = (opts.filter_label or "=").partition("=")
        self.filter_key, self.filter_value = key, value

    async def labels(self, args: dict[str, Any]) -> dict[str, dict[str, str]]:
        """Node name -> labels: from the NodeList sent, or from the node cache for node names."""
        nodes = _get(args, "Nodes")
        if nodes is not None:
            return {
                n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes.get("items") or []
            }
        names = _get(args, "NodeNames") or []
        if self.nodes is None:
            return {name: {} for name in names}
        return await self.nodes.labels(names)

    def annotations(self, args: dict[str, Any]) -> dict[str, dict[str, str]]:
        nodes = _get(args, "Nodes") or {}
        return {
            n["metadata"]["name"]: n["metadata"].get("annotations") or {} for n in nodes.get("items") or []
        }

    async def filter(self, args: dict[str, Any]) -> Any:
        labels = await self.labels(args)
        if self.opts.filter_annotation:  # read from the Node objects sent (not node-cache-capable)
            labels = self.annotations(args)
            self.filter_key, _, self.filter_value = self.opts.filter_annotation.partition("=")
        passed, failed = [], {}
        for name, lab in labels.items():
            if not self.filter_key or lab.get(self.filter_key) == self.filter_value:
                passed.append(name)
            else:
                failed[name] = f"node(s) didn't have label {self.filter_key}={self.filter_value}"
        out: dict[str, Any] = {"FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
        out["FailedAndUnresolvableNodes" if self.opts.unresolvable else "FailedNodes"] = failed
        if _get(args, "Nodes") is not None:
            keep = set(passed)
            items = [n for n in _get(args, "Nodes")["items"] if n["metadata"]["name"] in keep]
            out["Nodes"] = {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}
        else:
            out["NodeNames"] = passed
        if self.opts.fault == "unknown-node":
            out["NodeNames"] = [*passed, "no-such-node"]
            if "Nodes" in out:
                out["Nodes"]["items"].append({"metadata": {"name": "no-such-node"}})
        return out

    async def prioritize(self, args: dict[str, Any]) -> Any:
        labels = await self.labels(args)
        out = []
        for name, lab in labels.items():
            try:
                score = int(lab.get(self.opts.score_label or "", "0"))
            except ValueError:
                score = 0
            out.append({"Host": name, "Score": max(0, min(10, score))})
        return out

    async def bind(self, args: dict[str, Any]) -> Any:
        ns, name, node = _get(args, "PodNamespace"), _get(args, "PodName"), _get(args, "Node")
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": _get(args, "PodUID")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        assert self.session is not None
        async with self.session.post(
            f"{self.opts.api}/api/v1/namespaces/{ns}/pods/{name}/binding", json=body
        ) as r:
            if r.status >= 300:
                return {"Error": f"binding {ns}/{name} to {node}: HTTP {r.status}: {await r.text()}"}
        return {"Error": ""}

    async def preempt(self, args: dict[str, Any]) -> Any:
        keep = set(self.opts.preempt_nodes.split(",")) if self.opts.preempt_nodes else None
        out: dict[str, Any] = {}
        meta = _get(args, "NodeNameToMetaVictims")
        full = _get(args, "NodeNameToVictims")
        for node, victims in (meta or full or {}).items():
            if keep is not None and node not in keep:
                continue
            pods = _get(victims, "Pods") or []
            uids = [_get(p, "UID") if meta is not None else p["metadata"]["uid"] for p in pods]
            out[node] = {
                "Pods": [{"UID": u} for u in uids],
                "NumPDBViolations": _get(victims, "NumPDBViolations") or 0,
            }
        return {"NodeNameToMetaVictims": out}

    def handler(self, verb: str) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.stats[verb] += 1
            fault = self.opts.fault
            if fault == "slow":
                await asyncio.sleep(self.opts.slow_s)
            if fault == "500":
                return web.Response(status=500, text="extender failure")
            if fault == "bad-json":
                return web.Response(body=b"{not json", content_type="application/json")
            if fault == "huge":
                return web.Response(
                    body=b'{"Error": "' + b"x" * 20_000_000 + b'"}', content_type="application/json"
                )
            args = orjson.loads(await request.read())
            reply = await getattr(self, verb)(args)
            return web.Response(body=orjson.dumps(reply), content_type="application/json")

        return handle

    async def stats_handler(self, request: web.Request) -> web.Response:
        return web.json_response(dict(self.stats))


async def serve(opts: argparse.Namespace) -> None:
    ext = Extender(opts)
    ext.session = ClientSession()
    if opts.api and (ext.filter_key or opts.score_label):
        ext.nodes = NodeCache(ext.session, opts.api)
        ext.nodes.task = asyncio.create_task(ext.nodes.watch())
    app = web.Application(client_max_size=256 * 1024 * 1024)
    for verb in VERBS:
        if verb in ext.modes:
            app.router.add_post(f"/{verb}", ext.handler(verb))
    app.router.add_get("/stats", ext.stats_handler)
    app.router.add_get("/healthz", lambda _r: web.Response(text="ok"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tls = None
    if opts.tls_cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(opts.tls_cert, opts.tls_key or None)
    site = web.TCPSite(runner, opts.host, opts.port, ssl_context=tls)
    await site.start()
    port = runner.addresses[0][1]
    print(f"listening on {'https' if tls else 'http'}://{opts.host}:{port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await ext.session.close()
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8888, help="0 picks a free port")
    p.add_argument(
        "--mode", default="filter,prioritize", help=f"comma-separated verbs to serve: {', '.join(VERBS)}"
    )
    p.add_argument("--filter-label", default="", help="KEY=VALUE a node needs to pass the filter")
    p.add_argument(
        "--filter-annotation", default="", help="KEY=VALUE annotation a node needs (Node objects only)"
    )
    p.add_argument("--unresolvable", action="store_true", help="report filtered nodes as unresolvable")
    p.add_argument("--score-label", default="", help="label whose integer value (0..10) is the node's score")
    p.add_argument("--api", default="", help="API server URL, for bind and for node-cache-capable requests")
    p.add_argument(
        "--preempt-nodes", default="", help="comma-separated nodes preemption may use (all when empty)"
    )
    p.add_argument("--tls-cert", default="", help="serve HTTPS with this PEM certificate (chain)")
    p.add_argument("--tls-key", default="", help="the certificate's PEM private key")
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--slow-s", type=float, default=10.0)
    opts = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(opts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
