"""``metadata.managedFields`` as kube-apiserver's field manager records them on every write.

One entry per (manager, operation, subresource): ``{manager, operation, apiVersion, time,
fieldsType: FieldsV1, fieldsV1[, subresource]}``. A write by a manager adds the fields it changed to
its entry (and takes them from every other manager's, as an Update does); fields the write removed
leave every entry; an entry left with no fields goes away. A write that changes nothing leaves
managedFields as they were. A binding is not a field-manager write (upstream's binding storage sets
``spec.nodeName`` directly), so it records nothing.

fieldsV1 keys follow structured-merge-diff's shapes without the schema: ``f:<field>`` for struct
fields, ``.`` for a string-keyed map (labels, requests, capacity, ...) and for a list item,
``k:{...}`` for the items of the associative lists upstream declares with merge keys (containers,
ports, env, volumes, conditions, addresses, ...), ``v:<json>`` for set items (finalizers), and a leaf
``{}`` for scalars and atomic lists. Exactness of every key matters less than size and shape: this is
what a scheduler decodes off the watch stream.

Cost: a create walks the object once; an update diffs only the top-level parts that are not the
very same objects as the stored version's (writes share unchanged parts), so a status write walks
the status alone. Server-side apply (operation Apply) is not served by the embedded cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ksched.sim._resources import ResourceType

Obj = dict[str, Any]
FieldSet = dict[str, Any]

_SKIP_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
"""metadata fields the server owns, never in a field set (upstream's stripped fields)."""
_SKIP_TOP = frozenset({"apiVersion", "kind"})
_MAPS = frozenset(
    {
        "labels",
        "annotations",
        "nodeSelector",
        "limits",
        "requests",
        "capacity",
        "allocatable",
        "data",
        "binaryData",
        "stringData",
        "matchLabels",
        "parameters",
        "volumeAttributes",
        "hard",
        "used",
        "attributes",
    }
)
"""Fields that are string-keyed maps (their own ``.`` entry), not structs."""
_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "volumes": ("name",),
    "conditions": ("type",),
    "addresses": ("type",),
    "imagePullSecrets": ("name",),
    "podIPs": ("ip",),
    "hostIPs": ("ip",),
    "ownerReferences": ("uid",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "resourceClaims": ("name",),
}
"""Associative lists and their merge keys (``ports`` picks its keys per item)."""
_SETS = frozenset({"finalizers"})
_ADMISSION_FIELDS = frozenset(
    {"f:serviceAccountName", "f:serviceAccount", "f:priority", "f:preemptionPolicy", "f:tolerations"}
)
"""A pod's fields the Priority, ServiceAccount and DefaultTolerationSeconds admission plugins set.
(A pod's own tolerations are dropped with them: the entry cannot tell them apart.)"""
_NO_DEFAULT_MANAGER = "ksched-sim"
_MANAGERS: dict[tuple[str, str], str] = {
    ("nodes", ""): "kubelet",
    ("nodes", "status"): "kubelet",
    ("pods", "status"): "kubelet",
    ("leases.coordination.k8s.io", ""): "kubelet",
    ("events", ""): "kube-scheduler",
    ("namespaces", ""): "kube-apiserver",
    ("pods", ""): "kube-controller-manager",
}
"""The embedded cluster's own writers (``manager`` None) named as the upstream component that makes
such a write; anything else is a controller's."""


def field_manager(user_agent: str, query: Mapping[str, str]) -> str:
    """The manager a request writes as: ``fieldManager``, else the user agent's first word."""
    return query.get("fieldManager") or user_agent.split("/", 1)[0]


def record(
    rtype: ResourceType,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    manager: str | None,
    subresource: str,
    now: str,
) -> None:
    """Set ``obj.metadata.managedFields`` for this write (``old`` is the replaced object)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or subresource not in ("", "status"):
        if old is not None and isinstance(meta, dict):
            _keep(meta, old)
        return
    old_meta = old.get("metadata") if old is not None else None
    old_mf = old_meta.get("managedFields") if isinstance(old_meta, dict) else None
    base = _base(meta.get("managedFields"), old_mf, subresource)
    changed, removed = _changes(rtype, obj, old, subresource)
    if changed is None and removed is None and base is old_mf:
        if old is None:
            meta.pop("managedFields", None)
        else:
            _keep(meta, old)
        return
    if manager is None:
        manager = _MANAGERS.get((rtype.key, subresource), _NO_DEFAULT_MANAGER)
    entries = _apply(base or [], changed, removed, manager, subresource, rtype.api_version, now)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _keep(meta: Obj, old: Obj) -> None:
    """managedFields exactly as stored (a write that changes no field, or a binding)."""
    mf = (old.get("metadata") or {}).get("managedFields")
    if mf is None:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = mf


def _base(given: Any, stored: Any, subresource: str) -> list[Obj] | None:
    """The entries this write starts from: the request's own non-empty managedFields replace the
    stored ones on a main write (``[{}]`` clears them); absent or ``[]`` keeps the stored ones, as
    upstream does so that clients unaware of the field never strip it."""
    if subresource or given is stored or not isinstance(given, list) or not given or given == stored:
        return stored if isinstance(stored, list) else None
    return [e for e in given if isinstance(e, dict) and isinstance(e.get("fieldsV1"), dict) and e["fieldsV1"]]


def _roots(rtype: ResourceType, obj: Obj, subresource: str) -> list[str]:
    if subresource == "status":
        return ["status"] if "status" in obj else []
    has_status = "status" in rtype.subresources
    return [k for k in obj if k not in _SKIP_TOP and not (has_status and k == "status")]


def _changes(
    rtype: ResourceType, obj: Obj, old: Obj | None, subresource: str
) -> tuple[FieldSet | None, FieldSet | None]:
    """(fields the write set or changed, fields it removed), None for none."""
    changed: FieldSet = {}
    removed: FieldSet = {}
    for k in _roots(rtype, obj, subresource):
        v = obj[k]
        if old is None or k not in old:
            if k == "metadata":
                fs = _meta_fields(v)
            else:
                fs = _part_fields(v, k, old is None and k == "spec" and rtype.key == "pods")
            if fs is not None:
                changed[f"f:{k}"] = fs
            continue
        c, r = _meta_diff(old[k], v) if k == "metadata" else _diff(old[k], v, k)
        if c is not None:
            changed[f"f:{k}"] = c
        if r is not None:
            removed[f"f:{k}"] = r
    if old is not None:
        for k in _roots(rtype, old, subresource):
            if k not in obj:
                removed[f"f:{k}"] = {}
    return changed or None, removed or None


# -- field sets ------------------------------------------------------------------------------------------


def _item_key(item: Any, field: str) -> str | None:
    """``k:{...}`` for an associative list's item (merge keys sorted, as upstream serialises them)."""
    if not isinstance(item, dict):
        return None
    if field == "ports":
        names: tuple[str, ...] = (
            ("containerPort", "protocol") if "containerPort" in item else ("port", "protocol")
        )
    else:
        names = _LIST_KEYS[field]
    key = {n: item[n] for n in names if n in item}
    if not key:
        return None
    return "k:" + orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()


def _is_assoc(field: str) -> bool:
    return field in _LIST_KEYS or field == "ports"


def _fields(v: Any, field: str) -> FieldSet:
    """The field set of value ``v`` found at ``field``."""
    if isinstance(v, dict):
        out: FieldSet = {".": {}} if field in _MAPS and v else {}
        for k, sub in v.items():
            out[f"f:{k}"] = _fields(sub, k)
        return out
    if isinstance(v, list):
        if field in _SETS:
            return {".": {}, **{"v:" + orjson.dumps(x).decode(): {} for x in v}} if v else {}
        if _is_assoc(field):
            out = {}
            for item in v:
                key = _item_key(item, field)
                if key is None:
                    return {}
                out[key] = {".": {}, **_fields(item, "")}
            return out
    return {}


def _part_fields(v: Any, field: str, created_pod: bool = False) -> FieldSet:
    """:func:`_fields` of a top-level part, memoised by the part's JSON bytes.

    Objects made from one template (a workload's pods, a benchmark's) have byte-identical specs, and
    serialising one (in C) costs a fraction of walking it in Python; the cached field set is shared
    by every object with that part (field sets are never mutated: merges copy). The cache is
    bounded by dropping it whole when full. ``created_pod``: a new pod's spec, whose admission-set
    fields no manager owns.
    """
    if not isinstance(v, dict | list):
        return {}
    try:
        key = (field, created_pod, orjson.dumps(v))
    except TypeError:
        key = None
    got = _CACHE.get(key) if key is not None else None
    if got is None:
        got = _fields(v, field)
        if created_pod:
            got = {k: fs for k, fs in got.items() if k not in _ADMISSION_FIELDS}
        if key is not None:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.clear()
            _CACHE[key] = got
    return got


_CACHE: dict[tuple[str, bool, bytes] | None, FieldSet] = {}
_CACHE_SIZE = 2048


def _meta_fields(meta: Any) -> FieldSet | None:
    """The field set of a new object's metadata, memoised by its shape (the names of its fields and
    of their keys: label values, which differ per object, do not change it), so objects of one kind
    share one (a node's labels differ only in the hostname's value)."""
    if not isinstance(meta, dict):
        return {}
    shape: list[Any] = []
    for k, v in meta.items():
        if k in _SKIP_META:
            continue
        if isinstance(v, dict):
            shape.append((k, *v))
        elif isinstance(v, list):
            try:
                shape.append((k, orjson.dumps(v)))
            except TypeError:
                return _fresh_meta_fields(meta)
        else:
            shape.append(k)
    key = tuple(shape)
    got = _META.get(key)
    if got is None:
        if len(_META) >= _CACHE_SIZE:
            _META.clear()
        got = _META[key] = _fresh_meta_fields(meta)
    return got


def _fresh_meta_fields(meta: Obj) -> FieldSet | None:
    out = {f"f:{k}": _fields(v, k) for k, v in meta.items() if k not in _SKIP_META}
    return out or None


_META: dict[tuple[Any, ...], FieldSet | None] = {}


def _meta_diff(a: Any, b: Any) -> tuple[FieldSet | None, FieldSet | None]:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return _diff(a, b, "metadata")
    sa = {k: v for k, v in a.items() if k not in _SKIP_META}
    sb = {k: v for k, v in b.items() if k not in _SKIP_META}
    return _diff(sa, sb, "metadata")


def _diff(a: Any, b: Any, field: str) -> tuple[FieldSet | None, FieldSet | None]:
    """(the field set of what ``b`` sets that ``a`` did not, the one of what ``a`` had and ``b`` lost)."""
    if a is b:
        return None, None
    if isinstance(a, dict) and isinstance(b, dict):
        changed: FieldSet = {}
        removed: FieldSet = {}
        for k, v in b.items():
            if k not in a:
                changed[f"f:{k}"] = _fields(v, k)
                continue
            c, r = _diff(a[k], v, k)
            if c is not None:
                changed[f"f:{k}"] = c
            if r is not None:
                removed[f"f:{k}"] = r
        for k in a:
            if k not in b:
                removed[f"f:{k}"] = {}
        if field in _MAPS and changed and not a:
            changed["."] = {}
        return changed or None, removed or None
    if isinstance(a, list) and isinstance(b, list) and _is_assoc(field):
        return _list_diff(a, b, field)
    if a == b:
        return None, None
    return _fields(b, field), None


def _list_diff(a: list[Any], b: list[Any], field: str) -> tuple[FieldSet | None, FieldSet | None]:
    olds: dict[str, Any] = {}
    for item in a:
        key = _item_key(item, field)
        if key is None:
            return (None, None) if a == b else ({}, None)
        olds[key] = item
    changed: FieldSet = {}
    seen = set()
    for item in b:
        key = _item_key(item, field)
        if key is None:
            return {}, None
        seen.add(key)
        if key not in olds:
            changed[key] = {".": {}, **_fields(item, "")}
            continue
        c, _ = _diff(olds[key], item, "")
        if c is not None:
            changed[key] = c
    removed = {k: {} for k in olds if k not in seen}
    return changed or None, removed or None


# -- entries ------------------------------------------------------------------------------------------------


def _union(a: FieldSet, b: FieldSet) -> FieldSet:
    out = dict(a)
    for k, v in b.items():
        cur = out.get(k)
        out[k] = v if cur is None else (_union(cur, v) if v and cur else (cur or v))
    return out


def _subtract(a: FieldSet, b: FieldSet) -> FieldSet:
    """``a`` without the paths of ``b``; a leaf of ``b`` takes ``a``'s whole subtree there."""
    out: FieldSet = {}
    for k, v in a.items():
        if k not in b:
            out[k] = v
            continue
        sub = b[k]
        if not sub:
            continue
        if not v:
            out[k] = v
            continue
        rest = _subtract(v, sub)
        if rest:
            out[k] = rest
    return out


def _apply(
    entries: list[Obj],
    changed: FieldSet | None,
    removed: FieldSet | None,
    manager: str,
    subresource: str,
    api_version: str,
    now: str,
) -> list[Obj]:
    """The entries after ``manager``'s Update: its entry gains ``changed``, every entry loses
    ``removed`` and the others lose ``changed``; entries left empty are dropped."""
    out: list[Obj] = []
    mine: FieldSet = {}
    for e in entries:
        fs = e.get("fieldsV1")
        fs = fs if isinstance(fs, dict) else {}
        own = (
            e.get("manager") == manager
            and e.get("operation") == "Update"
            and (e.get("subresource") or "") == subresource
        )
        if own:
            mine = fs
            continue
        new_fs = fs
        if removed:
            new_fs = _subtract(new_fs, removed)
        if changed:
            new_fs = _subtract(new_fs, changed)
        if new_fs:
            out.append(e if new_fs == fs else {**e, "fieldsV1": new_fs})
    if removed:
        mine = _subtract(mine, removed)
    if changed:
        mine = _union(mine, changed) if mine else changed
    if mine:
        entry: Obj = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": now,
            "fieldsType": "FieldsV1",
            "fieldsV1": mine,
        }
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    if len(out) > 1:
        out.sort(
            key=lambda e: (e.get("operation") != "Apply", str(e.get("time") or ""), str(e.get("manager")))
        )
    return out
