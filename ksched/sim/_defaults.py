"""Defaulting: the fields kube-apiserver fills in on a write, before validation.

Upstream decodes every write through the scheme's defaulting functions (``SetObjectDefaults_*`` in
``pkg/apis/*/v1/zz_generated.defaults.go``), then the create strategy fills status and sets the
generation, then the default admission plugins run (Priority, DefaultTolerationSeconds,
ServiceAccount). :func:`apply` does all of that here, so an object read back from the embedded
cluster is as large as one from kube-apiserver, and what a scheduler decodes costs what it costs in
production. The storage kinds' own defaults live in :mod:`ksched.sim._storage_api`.

Every function here is copy-on-write: it returns its argument when nothing needed a default, else a
new dict or list. Stored objects are shared (an update's ``new`` shares every unchanged part with the
stored ``old``), so nothing reachable from ``old`` is ever mutated; and re-defaulting an already
defaulted object returns the very same parts, so a no-op write stays a no-op.

Differs from upstream: a status given on create is kept (upstream's create strategies reset it),
as tests and benchmarks seed pods, PDBs and workloads with a status; only its missing defaults are
filled. Not done: the ServiceAccount admission's projected ``kube-api-access-*`` token volume and its
volumeMounts (upstream refuses the pod until the namespace's ServiceAccount exists, which the
embedded cluster does not create); only ``serviceAccountName`` / ``serviceAccount`` are set.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import orjson

from ksched.sim._resources import ResourceType
from ksched.sim._storage_validation import DecodeError, quantity

Obj = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
"""DefaultTolerationSeconds admission: ``--default-not-ready-toleration-seconds`` and
``--default-unreachable-toleration-seconds``."""

_POD_SPEC_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("restartPolicy", "Always"),
    ("terminationGracePeriodSeconds", 30),
    ("dnsPolicy", "ClusterFirst"),
    ("schedulerName", "default-scheduler"),
)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_DEFAULTS = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)
_VOLUME_SOURCES_WITH_MODE = ("secret", "configMap", "downwardAPI", "projected")
_RBAC = "rbac.authorization.k8s.io"


def apply(rtype: ResourceType, obj: Obj, old: Obj | None) -> None:
    """Fill ``obj``'s defaulted fields in place (new dicts for changed parts: stored ones are shared).

    ``old`` is None on create; the create-only steps (status, generation, admission plugins)
    run then, the decode-time defaults on every write.
    """
    _null_map_values(obj)
    fn = _KINDS.get(rtype.key)
    if fn is not None:
        fn(obj, old)


def _null_map_values(obj: Obj) -> None:
    """A null label or annotation value decodes into Go's map[string]string as ``""``."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    for part in ("labels", "annotations"):
        values = meta.get(part)
        if isinstance(values, dict) and None in values.values():
            meta[part] = {k: "" if v is None else v for k, v in values.items()}


# -- copy-on-write helpers ----------------------------------------------------------------------------


def _with_defaults(d: Obj, pairs: tuple[tuple[str, Any], ...]) -> Obj:
    """``d`` with each missing (or null) key of ``pairs`` set; ``d`` itself when none was missing."""
    out = d
    for k, v in pairs:
        if out.get(k) is None:
            if out is d:
                out = dict(d)
            out[k] = v
    return out


def _map_list(items: Any, fn: Callable[[Obj], Obj]) -> Any:
    """``items`` with ``fn`` applied to each dict item; ``items`` itself when ``fn`` changed none."""
    if not isinstance(items, list):
        return items
    out = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        new = fn(item)
        if new is not item:
            if out is None:
                out = list(items)
            out[i] = new
    return items if out is None else out


def _set(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is not value:
        obj[key] = value


def _part(obj: Obj, key: str) -> Obj | None:
    v = obj.get(key)
    return v if isinstance(v, dict) else None


def _generation(obj: Obj, old: Obj | None) -> None:
    """Strategies with a generation: 1 on create, +1 when the spec changes."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    if old is None:
        meta["generation"] = 1
        return
    gen = (old.get("metadata") or {}).get("generation")
    if not isinstance(gen, int):
        return
    if obj.get("spec") is not old.get("spec") and obj.get("spec") != old.get("spec"):
        gen += 1
    meta["generation"] = gen


# -- pods -----------------------------------------------------------------------------------------------


def _image_pull_policy(image: Any) -> str:
    """Always for ``:latest`` or an untagged image, else IfNotPresent (a digest counts as a tag)."""
    if not isinstance(image, str) or "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "Always"
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def _port(p: Obj) -> Obj:
    return p if p.get("protocol") else {**p, "protocol": "TCP"}


def _probe(p: Obj) -> Obj:
    p = _with_defaults(p, _PROBE_DEFAULTS)
    http = p.get("httpGet")
    if isinstance(http, dict) and (not http.get("path") or not http.get("scheme")):
        p = {**p, "httpGet": _with_defaults(http, (("path", "/"), ("scheme", "HTTP")))}
    return p


def _resources(r: Obj) -> Obj:
    """Requests default to limits, resource by resource (SetDefaults_Pod)."""
    limits = r.get("limits")
    if not isinstance(limits, dict) or not limits:
        return r
    requests = r.get("requests")
    req = requests if isinstance(requests, dict) else {}
    if all(k in req for k in limits):
        return r
    return {**r, "requests": {**limits, **req}}


def _container(c: Obj) -> Obj:
    out = c
    if not c.get("imagePullPolicy"):
        out = {**c, "imagePullPolicy": _image_pull_policy(c.get("image"))}
    out = _with_defaults(
        out, (("terminationMessagePath", "/dev/termination-log"), ("terminationMessagePolicy", "File"))
    )
    ports = out.get("ports")
    new_ports = _map_list(ports, _port)
    if new_ports is not ports:
        out = {**out} if out is c else out
        out["ports"] = new_ports
    res = out.get("resources")
    if isinstance(res, dict):
        new_res = _resources(res)
        if new_res is not res:
            out = {**out} if out is c else out
            out["resources"] = new_res
    elif "resources" not in out:
        out = {**out} if out is c else out
        out["resources"] = {}
    for name in _PROBES:
        probe = out.get(name)
        if isinstance(probe, dict):
            new_probe = _probe(probe)
            if new_probe is not probe:
                out = {**out} if out is c else out
                out[name] = new_probe
    return out


def _volume(v: Obj) -> Obj:
    for src in _VOLUME_SOURCES_WITH_MODE:
        s = v.get(src)
        if isinstance(s, dict) and s.get("defaultMode") is None:
            return {**v, src: {**s, "defaultMode": 420}}
    if len(v) == 1 and "name" in v:
        return {**v, "emptyDir": {}}
    return v


def _pod_spec(spec: Obj, old: Obj | None) -> Obj:
    """SetDefaults_PodSpec and the containers' defaults (pods and pod templates alike)."""
    out = _with_defaults(spec, _POD_SPEC_DEFAULTS)
    if not isinstance(out.get("securityContext"), dict):
        out = {**out} if out is spec else out
        out["securityContext"] = {}
    for key in (*_CONTAINER_LISTS, "volumes"):
        items = out.get(key)
        if items is None or (old is not None and items is old.get(key)):
            continue
        new = _map_list(items, _volume if key == "volumes" else _container)
        if new is not items:
            out = {**out} if out is spec else out
            out[key] = new
    return out


def _pod_admission(spec: Obj) -> Obj:
    """The create-time admission plugins: ServiceAccount, Priority, DefaultTolerationSeconds."""
    out = dict(spec)
    sa = out.get("serviceAccountName") or out.get("serviceAccount") or "default"
    out["serviceAccountName"] = sa
    out["serviceAccount"] = sa
    if out.get("priority") is None:
        out["priority"] = 0
    out.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if out.get("enableServiceLinks") is None:
        out["enableServiceLinks"] = True
    tolerations = list(out.get("tolerations") or ())
    for key in (NOT_READY, UNREACHABLE):
        if not any(
            isinstance(t, dict) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
            for t in tolerations
        ):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    out["tolerations"] = tolerations
    return out


def _qos_class(spec: Obj) -> str:
    """The pod's QoS class as upstream's GetPodQOS computes it from cpu and memory."""
    requests: set[str] = set()
    guaranteed = True
    for c in spec.get("containers") or ():
        res = c.get("resources") or {} if isinstance(c, dict) else {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests.update(k for k in ("cpu", "memory") if k in req or k in lim)
        for k in ("cpu", "memory"):
            try:
                if k not in lim or k not in req or quantity(lim[k]) != quantity(req[k]):
                    guaranteed = False
            except DecodeError:
                guaranteed = False
    if not requests:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _created_pod_spec(spec: Obj) -> tuple[Obj, str]:
    """A new pod's spec after defaulting and admission, and its QoS class, memoised by the spec's
    JSON bytes: a workload's pods share one template, and re-reading cached bytes (in C) costs a
    fraction of defaulting in Python; each pod still gets its own fresh dicts."""
    try:
        key = orjson.dumps(spec)
    except TypeError:
        key = b""
    got = _CREATED.get(key) if key else None
    if got is None:
        new = _pod_admission(_pod_spec(spec, None))
        qos = _qos_class(new)
        if not key:
            return new, qos
        if len(_CREATED) >= _CACHE_SIZE:
            _CREATED.clear()
        got = _CREATED[key] = (orjson.dumps(new), qos)
    return orjson.loads(got[0]), got[1]


_CREATED: dict[bytes, tuple[bytes, str]] = {}
_CACHE_SIZE = 1024


def _pod(obj: Obj, old: Obj | None) -> None:
    spec = _part(obj, "spec")
    if spec is None:
        return
    old_spec = _part(old, "spec") if old is not None else None
    if old is None:
        spec, qos = _created_pod_spec(spec)
        obj["spec"] = spec
        status = obj.get("status")
        status = status if isinstance(status, dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": qos, **status}
        _generation(obj, None)
        return
    spec = _pod_spec(spec, old_spec) if spec is not old_spec else spec
    _set(obj, "spec", spec)
    if spec is not old_spec and spec.get("nodeName") == (old_spec or {}).get("nodeName"):
        _generation(obj, old)  # a binding sets nodeName without a new generation


# -- workloads ------------------------------------------------------------------------------------------


def _template(spec: Obj, old_spec: Obj | None) -> Obj:
    """``spec.template.spec`` defaulted as a pod spec (no pod-only admission defaults)."""
    tpl = spec.get("template")
    if not isinstance(tpl, dict) or (old_spec is not None and tpl is old_spec.get("template")):
        return spec
    pod_spec = tpl.get("spec")
    if not isinstance(pod_spec, dict):
        return spec
    old_tpl = (old_spec or {}).get("template")
    old_pod_spec = old_tpl.get("spec") if isinstance(old_tpl, dict) else None
    new_pod_spec = _pod_spec(pod_spec, old_pod_spec if isinstance(old_pod_spec, dict) else None)
    if new_pod_spec is pod_spec:
        return spec
    return {**spec, "template": {**tpl, "spec": new_pod_spec}}


def _workload(
    defaults: Callable[[Obj], Obj], status: tuple[tuple[str, Any], ...] = ()
) -> Callable[[Obj, Obj | None], None]:
    """A controller-managed kind: kind defaults, template defaults, status and generation.

    ``status`` holds the status fields Go always serialises (``replicas`` has no omitempty), which
    a reset status therefore shows as 0.
    """

    def fn(obj: Obj, old: Obj | None) -> None:
        spec = _part(obj, "spec")
        if spec is None:
            return
        old_spec = _part(old, "spec") if old is not None else None
        if spec is not old_spec:
            spec = _template(defaults(spec), old_spec)
            _set(obj, "spec", spec)
        if old is None:
            given = obj.get("status")
            obj["status"] = _with_defaults(given if isinstance(given, dict) else {}, status)
        _generation(obj, old)

    return fn


def _deployment(spec: Obj) -> Obj:
    out = _with_defaults(
        spec, (("replicas", 1), ("revisionHistoryLimit", 10), ("progressDeadlineSeconds", 600))
    )
    strategy = out.get("strategy")
    if not isinstance(strategy, dict) or not strategy.get("type"):
        strategy = {"type": "RollingUpdate", **(strategy if isinstance(strategy, dict) else {})}
    if strategy.get("type") == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        ru = ru if isinstance(ru, dict) else {}
        new_ru = _with_defaults(ru, (("maxUnavailable", "25%"), ("maxSurge", "25%")))
        if new_ru is not ru or "rollingUpdate" not in strategy:
            strategy = {**strategy, "rollingUpdate": new_ru}
    if strategy is not out.get("strategy"):
        out = {**out, "strategy": strategy}
    return out


def _replicaset(spec: Obj) -> Obj:
    return _with_defaults(spec, (("replicas", 1),))


def _replication_controller(spec: Obj) -> Obj:
    """Replicas 1; the selector defaults to the template's labels (SetDefaults_ReplicationController)."""
    out = _with_defaults(spec, (("replicas", 1),))
    tpl = out.get("template")
    labels = (tpl.get("metadata") or {}).get("labels") if isinstance(tpl, dict) else None
    if not out.get("selector") and isinstance(labels, dict) and labels:
        out = {**out, "selector": dict(labels)}
    return out


def _statefulset(spec: Obj) -> Obj:
    out = _with_defaults(
        spec,
        (
            ("replicas", 1),
            ("podManagementPolicy", "OrderedReady"),
            ("revisionHistoryLimit", 10),
            ("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}),
        ),
    )
    strategy = out.get("updateStrategy")
    if not isinstance(strategy, dict) or not strategy.get("type"):
        strategy = {"type": "RollingUpdate", **(strategy if isinstance(strategy, dict) else {})}
    if strategy.get("type") == "RollingUpdate" and not isinstance(strategy.get("rollingUpdate"), dict):
        strategy = {**strategy, "rollingUpdate": {"partition": 0}}
    if strategy is not out.get("updateStrategy"):
        out = {**out, "updateStrategy": strategy}
    return out


def _pdb(obj: Obj, old: Obj | None) -> None:
    """PDB strategy: status counters 0 unless given, generation 1 on create, +1 on a spec change."""
    if old is None:
        status = obj.get("status")
        obj["status"] = {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
            **(status if isinstance(status, dict) else {}),
        }
    _generation(obj, old)


# -- core kinds -----------------------------------------------------------------------------------------


def _node(obj: Obj, old: Obj | None) -> None:
    """SetDefaults_NodeStatus: allocatable defaults to capacity."""
    status = _part(obj, "status")
    if status is None or (old is not None and status is old.get("status")):
        return
    cap = status.get("capacity")
    if status.get("allocatable") is None and isinstance(cap, dict):
        obj["status"] = {**status, "allocatable": dict(cap)}


def _namespace(obj: Obj, old: Obj | None) -> None:
    """The metadata.name label on every write; spec.finalizers and phase Active on create."""
    meta = obj["metadata"]
    labels = meta.get("labels")
    name = meta.get("name")
    if not isinstance(labels, dict) or labels.get("kubernetes.io/metadata.name") != name:
        meta["labels"] = {**(labels if isinstance(labels, dict) else {}), "kubernetes.io/metadata.name": name}
    if old is None:
        obj["spec"] = obj.get("spec") or {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}


def _service_port(p: Obj) -> Obj:
    out = p if p.get("protocol") else {**p, "protocol": "TCP"}
    if out.get("targetPort") is None and "port" in out:
        out = {**out} if out is p else out
        out["targetPort"] = out["port"]
    return out


def _cluster_ip(obj: Obj) -> str:
    """A stable address in 10.96.0.0/12 for the service (the registry's allocator stand-in)."""
    meta = obj.get("metadata") or {}
    h = zlib.crc32(f"{meta.get('namespace')}/{meta.get('name')}".encode()) & 0xFFFFF
    return f"10.{96 + (h >> 16)}.{(h >> 8) & 255}.{max(h & 255, 1)}"


def _service(obj: Obj, old: Obj | None) -> None:
    spec = _part(obj, "spec")
    if spec is None or (old is not None and spec is old.get("spec")):
        return
    out = _with_defaults(spec, (("type", "ClusterIP"), ("sessionAffinity", "None")))
    ports = _map_list(out.get("ports"), _service_port)
    if ports is not out.get("ports"):
        out = {**out} if out is spec else out
        out["ports"] = ports
    kind = out.get("type")
    if kind != "ExternalName":
        out = _with_defaults(out, (("internalTrafficPolicy", "Cluster"),))
        if old is None and not out.get("clusterIP"):
            out = {**out} if out is spec else out
            out["clusterIP"] = _cluster_ip(obj)
        if out.get("clusterIP") and not out.get("clusterIPs"):
            out = {**out} if out is spec else out
            out["clusterIPs"] = [out["clusterIP"]]
        out = _with_defaults(out, (("ipFamilies", ["IPv4"]), ("ipFamilyPolicy", "SingleStack")))
    if kind in ("NodePort", "LoadBalancer"):
        out = _with_defaults(out, (("externalTrafficPolicy", "Cluster"),))
    if kind == "LoadBalancer":
        out = _with_defaults(out, (("allocateLoadBalancerNodePorts", True),))
    _set(obj, "spec", out)
    if old is None:
        obj["status"] = {"loadBalancer": {}}


def _role_ref(obj: Obj, old: Obj | None) -> None:
    """RBAC bindings: roleRef.apiGroup and each subject's apiGroup (SetDefaults_Subject)."""
    ref = _part(obj, "roleRef")
    if ref is not None and not ref.get("apiGroup"):
        obj["roleRef"] = {**ref, "apiGroup": _RBAC}

    def subject(s: Obj) -> Obj:
        if s.get("apiGroup") is not None:
            return s
        group = "" if s.get("kind") == "ServiceAccount" else _RBAC
        return {**s, "apiGroup": group}

    subjects = obj.get("subjects")
    new = _map_list(subjects, subject)
    if new is not subjects:
        obj["subjects"] = new


_KINDS: dict[str, Callable[[Obj, Obj | None], None]] = {
    "pods": _pod,
    "nodes": _node,
    "namespaces": _namespace,
    "services": _service,
    "deployments.apps": _workload(_deployment),
    "replicasets.apps": _workload(_replicaset, (("replicas", 0),)),
    "statefulsets.apps": _workload(_statefulset, (("replicas", 0), ("availableReplicas", 0))),
    "replicationcontrollers": _workload(_replication_controller, (("replicas", 0),)),
    "poddisruptionbudgets.policy": _pdb,
    "clusterrolebindings.rbac.authorization.k8s.io": _role_ref,
    "rolebindings.rbac.authorization.k8s.io": _role_ref,
}
"""Store key -> its defaulting; kinds upstream has no defaults for (leases, events, configmaps,
serviceaccounts, roles) are absent."""
