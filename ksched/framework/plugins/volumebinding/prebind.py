"""VolumeBinding's PreBind as a :class:`~ksched.framework.api.PendingPreBind` (upstream
``BindPodVolumes``): the API writes, then the wait for the PV controller, without blocking the
scheduling thread.

1. **bindAPIUpdate**: each assumed PV (pre-bound to its claim) is written back whole with a PUT,
   in order, then each claim to provision (with its selected node); one request at a time, the
   next sent when the previous one answered, the first failure ending it. The API's answer
   replaces the object the later checks compare versions with. On a failure the assumptions not
   yet written are restored (the written ones stay until Unreserve restores them or the informer
   delivers the new version), and the error is the API's message.
2. **checkBindings**, polled as upstream polls: first one second after the last write answered,
   then one second after each check, until every claim is bound, a check fails (``binding
   volumes: ...``), or ``bindTimeoutSeconds`` after the last write (``binding volumes: context
   deadline exceeded``; a timeout of 0 therefore fails at once, as upstream's does). It reads the
   informer's versions (``get_api``), never the assumed ones.

Requests go through the Handle's API client (its retries, rate limits and fencing); each is bounded
by :data:`REQUEST_TIMEOUT_S`, which upstream leaves to the client's defaults.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
from collections.abc import Callable
from typing import Any, Final

from ksched.errors import ApiError, ObjectError
from ksched.framework.api import SUCCESS, ApiClient, ClusterReader, Code, Status
from ksched.framework.plugins.volumebinding.binder import (
    Binding,
    PodVolumes,
    Provision,
    go_quote,
    revert_bindings,
    revert_provisions,
)
from ksched.framework.plugins.volumebinding.matching import node_affinity_matches
from ksched.framework.plugins.volumebinding.translation import TranslationError, effective_affinity
from ksched.model.paths import PathSegmentError, pv_path, pvc_path
from ksched.model.pod import Pod
from ksched.model.storage import ANN_SELECTED_NODE, pv_from_dict, pvc_from_dict

log = logging.getLogger(__name__)
POLL_INTERVAL_S: Final = 1.0
"""``wait.PollUntilContextTimeout(ctx, time.Second, ...)``."""
REQUEST_TIMEOUT_S: Final = 30.0
"""How long one PUT may take before PreBind fails with it."""
DEADLINE_EXCEEDED: Final = "context deadline exceeded"


class CheckFailed(Exception):
    """checkBindings found a condition that fails the binding (upstream's error text)."""


def api_error_text(exc: BaseException) -> str:
    """What upstream would print for a failed request: the API's own message for an API error."""
    if isinstance(exc, ApiError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return f"request timed out after {REQUEST_TIMEOUT_S:g}s"
    return str(exc)


def check_bindings(
    pod: Pod,
    bindings: list[Binding] | None,
    provisions: list[Provision] | None,
    cluster: ClusterReader,
) -> bool:
    """``checkBindings``: True when every claim is fully bound, False to check again later; raises
    :class:`CheckFailed` when the binding must fail and scheduling be retried."""
    pod_name = f"{pod.namespace}/{pod.name}"
    if bindings is None:
        raise CheckFailed(f"failed to get cached bindings for pod {go_quote(pod_name)}")
    if provisions is None:
        raise CheckFailed(f"failed to get cached claims to provision for pod {go_quote(pod_name)}")
    row = cluster.nodes.row_of.get(pod.node_name)
    if row is None:
        raise CheckFailed(
            f"failed to get node {go_quote(pod.node_name)}: node {go_quote(pod.node_name)} not found"
        )
    node = cluster.nodes.node(row)
    store = cluster.volumes
    csi_node = store.csi_nodes.get(node.name)
    if pod.uid not in cluster:
        raise CheckFailed(f"pod does not exist any more: pod {go_quote(pod.name)} not found")
    for b in bindings:
        pv = store.pvs.get_api(b.pv.name)
        if pv is None:
            raise CheckFailed(
                f"failed to check binding: could not find v1.PersistentVolume {go_quote(b.pv.name)}"
            )
        pvc = store.pvcs.get_api(b.pvc.key)
        if pvc is None:
            raise CheckFailed(
                f"failed to check binding: could not find v1.PersistentVolumeClaim {go_quote(b.pvc.key)}"
            )
        if b.pv.resource_version > pv.resource_version:
            return False  # our write has not come back through the informer yet
        try:
            terms = effective_affinity(pv, csi_node)
        except TranslationError as exc:
            raise CheckFailed(f"failed to translate pv to csi: {exc}") from exc
        if not node_affinity_matches(terms, node.labels):
            raise CheckFailed(
                f"pv {go_quote(pv.name)} node affinity doesn't match node {go_quote(node.name)}: "
                "no matching NodeSelectorTerms"
            )
        if pv.claim_ref is None or not pv.claim_ref.uid:
            raise CheckFailed(f"ClaimRef got reset for pv {go_quote(pv.name)}")
        if not pvc.fully_bound:
            return False
    for p in provisions:
        pvc = store.pvcs.get_api(p.pvc.key)
        if pvc is None:
            missing = f"could not find v1.PersistentVolumeClaim {go_quote(p.pvc.key)}"
            raise CheckFailed(f"failed to check provisioning pvc: {missing}")
        if p.pvc.resource_version > pvc.resource_version:
            return False
        if (pvc.raw.get("metadata") or {}).get("annotations") is None:
            raise CheckFailed(f"selectedNode annotation reset for PVC {go_quote(pvc.name)}")
        if pvc.annotations.get(ANN_SELECTED_NODE, "") != pod.node_name:
            raise CheckFailed(f"provisioning failed for PVC {go_quote(pvc.name)}")
        if pvc.volume_name:
            pv = store.pvs.get_api(pvc.volume_name)
            if pv is None:
                return False  # the PV may not have reached the informer yet
            try:
                terms = effective_affinity(pv, csi_node)
            except TranslationError as exc:
                raise CheckFailed(str(exc)) from exc
            if not node_affinity_matches(terms, node.labels):
                raise CheckFailed(
                    f"pv {go_quote(pv.name)} node affinity doesn't match node {go_quote(node.name)}: "
                    "no matching NodeSelectorTerms"
                )
        if not pvc.fully_bound:
            return False
    return True


class BindingVolumes:
    """One pod's ``BindPodVolumes`` in progress (see the module docstring). Scheduling thread only,
    except :meth:`_answered`, which the client calls on its own thread and which only wakes."""

    def __init__(
        self,
        *,
        client: ApiClient,
        cluster: ClusterReader,
        pod: Pod,
        pod_volumes: PodVolumes,
        bind_timeout_s: float,
    ) -> None:
        self._client = client
        self._cluster = cluster
        self._pod = pod
        self._volumes = pod_volumes
        self._timeout_s = bind_timeout_s
        self._bindings = pod_volumes.static_bindings
        self._provisions = pod_volumes.dynamic_provisions
        self._next = 0
        """Index of the next write among bindings then provisions."""
        self._future: concurrent.futures.Future[Any] | None = None
        self._waker: Callable[[], None] | None = None
        self._deadline = math.inf
        self._next_check = math.inf
        self._writing = True
        self._early: Status | None = None
        if self._bindings is None:
            self._early = self._fail(f"failed to get cached bindings for pod {go_quote(self._pod_name)}")
        elif self._provisions is None:
            self._early = self._fail(
                f"failed to get cached claims to provision for pod {go_quote(self._pod_name)}"
            )
        elif self._writes:
            self._send()

    @property
    def _pod_name(self) -> str:
        return f"{self._pod.namespace}/{self._pod.name}"

    @property
    def _writes(self) -> int:
        return len(self._bindings or ()) + len(self._provisions or ())

    # ------------------------------------------------------------------ PendingPreBind
    def set_waker(self, wake: Callable[[], None]) -> None:
        self._waker = wake
        if self._future is not None and self._future.done():
            wake()

    def next_poll_at(self) -> float:
        return math.inf if self._writing else min(self._next_check, self._deadline)

    def poll(self, now: float) -> Status | None:
        if self._early is not None:
            return self._early
        if self._writing:
            status = self._advance_writes(now)
            if status is not None or self._writing:
                return status
        if now >= self._deadline:
            return self._fail(f"binding volumes: {DEADLINE_EXCEEDED}")
        if now < self._next_check:
            return None
        self._next_check = now + POLL_INTERVAL_S
        try:
            bound = check_bindings(self._pod, self._bindings, self._provisions, self._cluster)
        except CheckFailed as exc:
            return self._fail(f"binding volumes: {exc}")
        return SUCCESS if bound else None

    # ------------------------------------------------------------------ bindAPIUpdate
    def _send(self) -> None:
        bindings = self._bindings or []
        i = self._next
        future: concurrent.futures.Future[Any]
        try:
            if i < len(bindings):
                pv = bindings[i].pv
                path, body = pv_path(pv.name), pv.raw
            else:
                pvc = (self._provisions or [])[i - len(bindings)].pvc
                path, body = pvc_path(pvc.namespace, pvc.name), pvc.raw
        except PathSegmentError as exc:  # a name no path can carry: this write fails, unsent
            future = concurrent.futures.Future()
            future.set_exception(exc)
        else:
            future = self._client.request("PUT", path, dict(body), timeout_s=REQUEST_TIMEOUT_S)
        self._future = future
        future.add_done_callback(self._answered)

    def _answered(self, _future: object) -> None:
        wake = self._waker
        if wake is not None:
            wake()

    def _advance_writes(self, now: float) -> Status | None:
        """Take in every answered write; None while writing (or once done: ``_writing`` says)."""
        while self._next < self._writes:
            future = self._future
            if future is None or not future.done():
                return None
            exc = future.exception()
            if exc is not None:
                self._revert_unwritten()
                return self._fail(api_error_text(exc))
            try:
                self._record(future.result())
            except ObjectError as err:
                self._revert_unwritten()
                return self._fail(str(err))
            self._next += 1
            if self._next < self._writes:
                self._send()
        self._writing = False
        self._future = None
        self._deadline = now + self._timeout_s
        self._next_check = now + POLL_INTERVAL_S
        return None

    def _record(self, answer: Any) -> None:
        """Keep the API's answer for the version checks (upstream saves the updated object)."""
        bindings = self._bindings or []
        i = self._next
        if i < len(bindings):
            bindings[i].pv = pv_from_dict(answer)
        else:
            provision = (self._provisions or [])[i - len(bindings)]
            provision.pvc = pvc_from_dict(answer)

    def _revert_unwritten(self) -> None:
        """Restore the assumptions of the writes that did not happen (the failed one included)."""
        store = self._cluster.volumes
        bindings = self._bindings or []
        i = self._next
        revert_bindings(bindings[i:], store)
        revert_provisions((self._provisions or [])[max(0, i - len(bindings)) :], store)

    def _fail(self, message: str) -> Status:
        log.debug("binding volumes of %s failed: %s", self._pod_name, message)
        return Status(Code.ERROR, (message,))
