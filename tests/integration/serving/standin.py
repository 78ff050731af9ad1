"""A stand-in for the API server's delegated-auth side, run as its own process (plain HTTP).

Serves only what ksched's secure port asks: TokenReview, SubjectAccessReview and the ConfigMap
kube-system/extension-apiserver-authentication. Its behaviour is a JSON file re-read on every
request, so a test changes it by rewriting the file::

    {"tokens": {"<token>": {"username": ..., "groups": [...]}},
     "allow": [["<user>", "<verb>", "<path>"], ...],
     "configmap": {"client-ca-file": "...", ...} or null (404),
     "status": 200}            # the status of TokenReview/SAR answers (503 to fail them)

``GET /counts`` says how many reviews it answered. Started with ``python -m
tests.integration.serving.standin STATE_FILE``; prints ``port=<n>`` once listening on 127.0.0.1.
The embedded cluster serves the same APIs (tests/integration/deploy/test_deploy_kubeadm.py scrapes
through it end to end); this stand-in stays for what it cannot be told to do: count the reviews
(caching) and fail them on demand.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web


def build(state_file: Path) -> web.Application:
    counts: Counter[str] = Counter()

    def state() -> dict[str, Any]:
        return dict(json.loads(state_file.read_text()))

    async def token_review(request: web.Request) -> web.Response:
        counts["tokenreviews"] += 1
        s, body = state(), await request.json()
        if s.get("status", 200) != 200:
            return web.json_response({"kind": "Status", "message": "unavailable"}, status=s["status"])
        user = s.get("tokens", {}).get(body["spec"]["token"])
        status = {"authenticated": True, "user": user} if user else {"authenticated": False}
        return web.json_response({**body, "status": status}, status=201)

    async def access_review(request: web.Request) -> web.Response:
        counts["subjectaccessreviews"] += 1
        s, body = state(), await request.json()
        if s.get("status", 200) != 200:
            return web.json_response({"kind": "Status", "message": "unavailable"}, status=s["status"])
        spec = body["spec"]
        attrs = spec["nonResourceAttributes"]
        allowed = [spec["user"], attrs["verb"], attrs["path"]] in s.get("allow", [])
        status: dict[str, Any] = {"allowed": allowed}
        if not allowed:
            status["reason"] = s.get("deny_reason", "")
        return web.json_response({**body, "status": status}, status=201)

    async def configmap(_: web.Request) -> web.Response:
        counts["configmap"] += 1
        data = state().get("configmap")
        if data is None:
            return web.json_response({"kind": "Status", "reason": "NotFound", "code": 404}, status=404)
        meta = {"name": "extension-apiserver-authentication", "namespace": "kube-system"}
        return web.json_response({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})

    async def count(_: web.Request) -> web.Response:
        return web.json_response(dict(counts))

    app = web.Application()
    app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", token_review)
    app.router.add_post("/apis/authorization.k8s.io/v1/subjectaccessreviews", access_review)
    app.router.add_get(
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", configmap
    )
    app.router.add_get("/counts", count)
    return app


async def main(state_file: Path) -> None:
    runner = web.AppRunner(build(state_file), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"port={port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
