"""PATCH bodies: JSON merge patch (RFC 7386), a strategic-merge subset, and JSON patch (RFC 6902).

The strategic merge covers what clients of a scheduler cluster send: lists with a known merge key
(``conditions`` by ``type``, ``containers`` by ``name``, ``taints`` by ``key``, ...) are merged
element-wise, ``$patch: delete``/``replace`` are honoured, ``$setElementOrder/...`` and
``$retainKeys`` directives are accepted and ignored (order is not significant to us). Every other list
is replaced, as merge patch does. Inputs are never mutated; a new object is returned.
"""

from __future__ import annotations

from typing import Any

from ksched.sim._status import StatusError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "taints": "key",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "podIPs": "ip",
    "addresses": "type",
    "readinessGates": "conditionType",
    "imagePullSecrets": "name",
    "drivers": "name",  # CSINode spec.drivers
    "finalizers": "",  # a set of strings, merged by value
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """The strategic-merge subset described in the module docstring."""
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...: accepted, ignored
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            _check_merge_keys(key, value, MERGE_KEYS[key])
            current = result.get(key)
            result[key] = _merge_list(current, value, MERGE_KEYS[key]) if isinstance(current, list) else value
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


_SCALARS = (str, int, float, bool)


def _check_merge_keys(name: str, items: list[Any], merge_key: str) -> None:
    """A merge key must be a scalar (the API server's types make it a string or a number): anything
    else is the client's error, answered 400 as the API server answers a body that does not decode,
    never a crash while merging."""
    for i, item in enumerate(items):
        if merge_key and isinstance(item, dict) and merge_key in item:
            value = item[merge_key]
            if value is not None and not isinstance(value, _SCALARS):
                raise bad_request(
                    f"{name}[{i}].{merge_key}: must be a string or a number, not {type(value).__name__}"
                )
        elif not merge_key and item is not None and not isinstance(item, _SCALARS):
            raise bad_request(f"{name}[{i}]: must be a string, not {type(item).__name__}")


def _merge_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if not merge_key:  # set of primitives
        out = list(current)
        out.extend(v for v in patch if v not in out)
        return out
    out = list(current)
    index = {  # stored items with an odd key (written before this check existed) match nothing
        item.get(merge_key): i
        for i, item in enumerate(out)
        if isinstance(item, dict) and (item.get(merge_key) is None or isinstance(item[merge_key], _SCALARS))
    }
    deleted: set[Any] = set()
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            return list(patch)  # not mergeable: behave like replace
        k = item[merge_key]
        if item.get("$patch") == "delete":
            deleted.add(k)
            continue
        if k in index:
            out[index[k]] = strategic_merge_patch(out[index[k]], item)
        else:
            index[k] = len(out)
            out.append({kk: vv for kk, vv in item.items() if kk != "$patch"})
    if deleted:
        out = [i for i in out if not (isinstance(i, dict) and i.get(merge_key) in deleted)]
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise StatusError(400, f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 add/remove/replace/test/move/copy on a deep copy of ``target``."""
    import orjson

    if not isinstance(ops, list):
        raise StatusError(400, "json patch must be a list of operations")
    doc = orjson.loads(orjson.dumps(target))
    try:
        for op in ops:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "test":
                if _walk(doc, parts) != op["value"]:
                    raise StatusError(422, f"test operation failed at {op['path']}", reason="Invalid")
                continue
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = _walk(doc, src)
                if kind == "move":
                    parent = _walk(doc, src[:-1])
                    del parent[int(src[-1]) if isinstance(parent, list) else src[-1]]
                kind, op = "add", {"value": orjson.loads(orjson.dumps(value))}
            if not parts:
                doc = op.get("value")
                continue
            parent, last = _walk(doc, parts[:-1]), parts[-1]
            if kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind in ("add", "replace"):
                if isinstance(parent, list):
                    idx = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(idx, op["value"])
                    else:
                        parent[idx] = op["value"]
                else:
                    if kind == "replace" and last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            else:
                raise StatusError(400, f"unknown json patch op {kind!r}")
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise StatusError(422, f"json patch cannot be applied: {exc!r}", reason="Invalid") from exc
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> Any:
    """Dispatch on the request's Content-Type; 415 for types we do not speak."""
    ctype = content_type.split(";")[0].strip()
    if ctype == MERGE or ctype == "application/json":
        if not isinstance(patch, dict):
            raise StatusError(400, "merge patch body must be a JSON object")
        return merge_patch(target, patch)
    if ctype == STRATEGIC:
        if not isinstance(patch, dict):
            raise StatusError(400, "strategic merge patch body must be a JSON object")
        return strategic_merge_patch(target, patch)
    if ctype == JSON_PATCH:
        return json_patch(target, patch)
    raise StatusError(
        415,
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}",
        reason="UnsupportedMediaType",
    )
