"""The ephemeral volume controller stand-in (``pkg/controller/volume/ephemeral``), plus its cleanup.

For each pod not being deleted, each ``spec.volumes[]`` with an ``ephemeral.volumeClaimTemplate``
gets the claim ``<pod name>-<volume name>`` in the pod's namespace: the template's labels,
annotations and spec, owned by the pod (``controller: true``, ``blockOwnerDeletion: true``). A claim
of that name that the pod does not own is left alone and logged, as upstream refuses it; the
scheduler reports it too. A pod is synced again when one of its claims is deleted.

Beyond upstream's controller, on purpose: when a pod is deleted, the claims it controls are deleted
(what kube-controller-manager's garbage collector does, which the embedded cluster lacks), so that
a new pod of the same name gets fresh claims instead of "not created for pod" ones.
"""

from __future__ import annotations

import logging

from ksched.errors import ApiError
from ksched.sim.storage_controllers._api import AlreadyExists, Api, Obj
from ksched.sim.storage_controllers._informer import Informer, WorkQueue, run_worker
from ksched.sim.storage_controllers._matching import spec_of

log = logging.getLogger(__name__)

COMPONENT = "ephemeral-volume-controller"
Key = tuple[str, str, str]
"""("pod", namespace, name) or ("orphans", namespace, pod uid)."""


def _ephemeral_volumes(pod: Obj) -> list[tuple[int, Obj]]:
    volumes = spec_of(pod).get("volumes")
    out = []
    for i, vol in enumerate(volumes if isinstance(volumes, list) else ()):
        if isinstance(vol, dict) and isinstance(vol.get("ephemeral"), dict):
            out.append((i, vol))
    return out


def _controller_uid(claim: Obj) -> str:
    for ref in claim["metadata"].get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid", ""))
    return ""


class EphemeralController:
    """Creates the claims of generic ephemeral volumes over HTTP; see the module docstring."""

    def __init__(
        self, api: Api, *, pods: Informer, claims: Informer, queue: WorkQueue[Key] | None = None
    ) -> None:
        self.api = api
        self.pods, self.claims = pods, claims
        self.queue: WorkQueue[Key] = queue or WorkQueue()
        self._refused: set[tuple[str, str]] = set()
        pods.add_handler(self._on_pod)
        claims.add_handler(self._on_claim)

    def _on_pod(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        if new is not None:
            if _ephemeral_volumes(new):
                self.queue.add(("pod", new["metadata"].get("namespace", ""), new["metadata"]["name"]))
        elif old is not None:
            self.queue.add(
                ("orphans", old["metadata"].get("namespace", ""), str(old["metadata"].get("uid", "")))
            )

    def _on_claim(self, type_: str, new: Obj | None, old: Obj | None) -> None:
        if new is None and old is not None:
            for ref in old["metadata"].get("ownerReferences") or ():
                if isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("controller") is True:
                    self.queue.add(("pod", old["metadata"].get("namespace", ""), str(ref.get("name", ""))))

    def resync(self) -> None:
        for pod in self.pods.items.values():
            self._on_pod("MODIFIED", pod, None)

    async def run(self) -> None:
        informers = {"pods": self.pods, "persistentvolumeclaims": self.claims}
        await run_worker(COMPONENT, self.queue, self.sync, self.api, informers)

    async def sync(self, key: Key) -> None:
        kind, namespace, name = key
        if kind == "orphans":
            await self._delete_orphans(namespace, name)
            return
        pod = self.pods.get(namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        for i, vol in _ephemeral_volumes(pod):
            await self._ensure_claim(pod, i, vol)

    async def _ensure_claim(self, pod: Obj, index: int, vol: Obj) -> None:
        meta = pod["metadata"]
        ns, uid = meta.get("namespace", ""), str(meta.get("uid", ""))
        claim_name = f"{meta['name']}-{vol.get('name', '')}"
        existing = self.claims.get(ns, claim_name)
        if existing is not None:
            if _controller_uid(existing) != uid and (uid, claim_name) not in self._refused:
                self._refused.add((uid, claim_name))
                log.warning(
                    "PVC %s/%s was not created for pod %s/%s (pod is not owner)",
                    ns,
                    claim_name,
                    ns,
                    meta["name"],
                )
            return
        template = vol["ephemeral"].get("volumeClaimTemplate")
        tmpl_spec = template.get("spec") if isinstance(template, dict) else None
        if not isinstance(tmpl_spec, dict):
            field = f"spec.volumes[{index}].ephemeral.volumeClaimTemplate.spec"
            log.warning(
                "pod %s/%s: %s is missing or not an object; no claim created", ns, meta["name"], field
            )
            return
        tmpl_meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
        claim_meta: Obj = {
            "name": claim_name,
            "namespace": ns,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        for part in ("labels", "annotations"):
            if isinstance(tmpl_meta.get(part), dict):
                claim_meta[part] = tmpl_meta[part]
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_meta,
            "spec": tmpl_spec,
        }
        try:
            self.claims.store(await self.api.create("persistentvolumeclaims", claim, ns))
        except AlreadyExists:
            pass  # created meanwhile (or by someone else): the watch brings it and the pod syncs again
        except ApiError as exc:
            if 400 <= exc.status < 500 and exc.status != 429:
                log.warning("pod %s/%s: claim %s refused: %s", ns, meta["name"], claim_name, exc.message)
                return  # the template is invalid: retrying cannot help until the pod changes
            raise

    async def _delete_orphans(self, namespace: str, pod_uid: str) -> None:
        if not pod_uid or any(str(p["metadata"].get("uid")) == pod_uid for p in self.pods.items.values()):
            return
        for (ns, name), claim in list(self.claims.items.items()):
            if ns == namespace and _controller_uid(claim) == pod_uid:
                await self.api.delete(
                    "persistentvolumeclaims", name, ns, uid=str(claim["metadata"].get("uid", ""))
                )
