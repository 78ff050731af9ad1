"""More malformed (and valid-but-extreme) objects than the corpus holds, by seeded mutation.

Each :class:`Mutation` makes one class of object from a ``random.Random``: the same seed gives the
same objects, so a failure of the big run is replayed with ``--seed``. The property test draws the
same classes through hypothesis (:func:`generated`). Every object is an
:class:`~tests.malformed.corpus.ObjectEntry` carrying what the API server must answer.

``ready`` says whether the embedded cluster refuses that class today (malformed bodies, wrong
kinds and namespaces, strict unknown fields, missing names, and the valid-but-extreme ones, which it
accepts); the others wait for its validation, and are reported as "accepted but expected refusal"
until it refuses them.

Bombs (for ``ksched run --config`` and ``ksched explain``) are files, not objects:
:func:`bomb_text` expands a corpus recipe.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.malformed.corpus import ObjectEntry

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
NAME_FIELDS = ("metadata.name", "metadata.generateName")
HOSTILE_CHARS = "\n\r\t\0\x1b/?#%&=+ .._-ABCZ\u200b\u0456\uff54\u202e\U0001f600\\\"'"
QUALIFIED_PREFIX = ".".join(["d" * 63] * 3) + "." + "e" * 61
"""A DNS-1123 subdomain of the longest length (253), for label keys."""
RESOURCE_PREFIX = ".".join(["d" * 63] * 3) + "." + "e" * 52
"""The longest prefix of an extended resource name: ``requests.`` + it must still be a 253-char
subdomain (upstream's ``IsExtendedResourceName`` checks the quota name too)."""


@dataclass(frozen=True)
class Mutation:
    name: str
    ready: bool
    make: Callable[[random.Random, int], ObjectEntry]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def entry(
    cls: str,
    n: int,
    obj: Any,
    *,
    field: str | None,
    code: int | None,
    raw: bytes | None = None,
    query: str = "",
    kind: str = "Pod",
    ready: bool = True,
) -> ObjectEntry:
    body = raw if raw is not None else json.dumps(obj, ensure_ascii=False).encode()
    return ObjectEntry(
        f"gen:{cls}",
        f"{cls}-{n}",
        kind,
        body,
        "default",
        field,
        code,
        query,
        ready,
        None if raw is not None else obj,
    )


# -- refused by the embedded cluster today --------------------------------------------------------
def truncated_json(rng: random.Random, n: int) -> ObjectEntry:
    text = json.dumps(pod(f"t-{n}", nodeSelector={"a": "b" * rng.randrange(50)}))
    return entry(
        "truncated_json", n, None, field="", code=400, raw=text[: rng.randrange(1, len(text))].encode()
    )


def metadata_type(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod("x")
    obj["metadata"] = rng.choice(
        ["x" * rng.randrange(1, 100), rng.randrange(-(2**70), 2**70), [1, "a"], True]
    )
    return entry("metadata_type", n, obj, field="", code=400)


def body_type(rng: random.Random, n: int) -> ObjectEntry:
    value = rng.choice([[pod("x")], "pod", rng.random() * 1e300, None, False, -(2**65)])
    return entry("body_type", n, None, field="", code=400, raw=json.dumps(value).encode())


def kind_mismatch(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"k-{n}")
    obj["kind"] = rng.choice(["Node", "Lease", "Namespace", "Event", "pod", "PodList", "Binding"])
    return entry("kind_mismatch", n, obj, field="", code=400)


def namespace_mismatch(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"ns-{n}")
    obj["metadata"]["namespace"] = rng.choice(["kube-system", "other", f"ns{n}", "default-"])
    return entry("namespace_mismatch", n, obj, field="", code=400)


def no_name(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod("x")
    obj["metadata"] = rng.choice([{}, {"labels": {"a": "b"}}, {"name": ""}, {"generateName": ""}])
    return entry("no_name", n, obj, field="metadata.name", code=422)


def strict_unknown(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"u-{n}")
    unknown = rng.choice(["bogus", "nodename", "Containers", "x-y", "_"]) + str(rng.randrange(100))
    where, path = rng.choice(
        [
            (obj["spec"], "spec"),
            (obj["metadata"], "metadata"),
            (obj["spec"]["containers"][0], "spec.containers[0]"),
        ]
    )
    where[unknown] = rng.choice([1, "v", None, [], {}])
    return entry(
        "strict_unknown", n, obj, field=f"{path}.{unknown}", code=400, query="fieldValidation=Strict"
    )


# -- waiting for the embedded cluster's validation -----------------------------------------------
def wrong_types(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"w-{n}")
    path, value = rng.choice(
        [
            ("spec", rng.choice(["hello", 5, [1]])),
            ("metadata.labels", rng.choice([["a"], "a=b", 7])),
            ("metadata.name", rng.choice([5, ["x"], {"a": 1}])),
            ("spec.containers", rng.choice(["x", {"name": "c"}, 3])),
            ("spec.priority", rng.choice(["high", 1.5, [1]])),
            ("spec.nodeSelector", rng.choice([["a"], "a=b"])),
            ("spec.tolerations", rng.choice([{"key": "a"}, "a"])),
        ]
    )
    _set(obj, path, value)
    return entry("wrong_types", n, obj, field=path, code=400)


def out_of_range(rng: random.Random, n: int) -> ObjectEntry:
    path = rng.choice(["spec.priority", "spec.terminationGracePeriodSeconds", "spec.activeDeadlineSeconds"])
    limit = INT32_MAX if path == "spec.priority" else INT64_MAX
    value = rng.choice([limit + 1 + rng.randrange(10**6), -limit - 2 - rng.randrange(10**6), 10**30])
    obj = pod(f"r-{n}")
    _set(obj, path, value)
    return entry("out_of_range", n, obj, field=path, code=None)


def hostile_name(rng: random.Random, n: int) -> ObjectEntry:
    base = list(f"twin-{n}")
    for _ in range(rng.randrange(1, 4)):
        base.insert(rng.randrange(len(base) + 1), rng.choice(HOSTILE_CHARS))
    name = "".join(base)
    if rng.random() < 0.1:
        name = "a" * rng.randrange(254, 400)
    if name in (".", "..") or _dns_subdomain(name):
        name += "\n"
    return entry("hostile_name", n, pod(name), field="metadata.name", code=422)


def huge_labels(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"l-{n}")
    if rng.random() < 0.5:
        obj["metadata"]["labels"] = {"app": "v" * rng.choice([64, 1000, 2**20])}
    else:
        obj["metadata"]["labels"] = {rng.choice(["a\0b", "-a", "a/b/c", "k" * 64, "\x1b[2J"]): "v"}
    return entry("huge_labels", n, obj, field="metadata.labels", code=422)


def huge_annotations(rng: random.Random, n: int) -> ObjectEntry:
    obj = pod(f"a-{n}")
    obj["metadata"]["annotations"] = {"a": "x" * (262144 + rng.randrange(1, 2**20))}
    return entry("huge_annotations", n, obj, field="metadata.annotations", code=422)


def invalid_quantity(rng: random.Random, n: int) -> ObjectEntry:
    """A quantity kube-apiserver refuses. A text ``ParseQuantity`` cannot read fails while decoding,
    with a 400 that names no field (the quantity's UnmarshalJSON error carries no path); a negative
    one decodes and fails validation, with a 422 naming the field."""
    resource = rng.choice(["cpu", "memory", "ephemeral-storage"])
    value = rng.choice(["abc", "1..2", "-1", "1Qi", "", "1e", "0x10", "--1"])
    obj = pod(f"q-{n}")
    obj["spec"]["containers"][0]["resources"] = {"requests": {resource: value}}
    if value == "-1":
        return entry(
            "invalid_quantity",
            n,
            obj,
            field=f"spec.containers[0].resources.requests[{resource}]",
            code=422,
        )
    return entry("invalid_quantity", n, obj, field="", code=400)


def broken_selector(rng: random.Random, n: int) -> ObjectEntry:
    term = {"key": "zone", "operator": "In", "values": ["a"]}
    broken, path = rng.choice(
        [
            (
                {"operator": "Near"},
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpressions[0].operator",
            ),
            (
                {"values": []},
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpressions[0].values",
            ),
            (
                {"key": "a b"},
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpressions[0].key",
            ),
        ]
    )
    term.update(broken)
    required = {"nodeSelectorTerms": [{"matchExpressions": [term]}]}
    obj = pod(
        f"s-{n}", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    )
    if rng.random() < 0.3:
        obj = pod(f"s-{n}", nodeSelector={"a": "b" * 64})
        path = "spec.nodeSelector"
    return entry("broken_selector", n, obj, field=path, code=422)


# -- valid but extreme: accepted, and the scheduler must cope --------------------------------------
def valid_extreme(rng: random.Random, n: int) -> ObjectEntry:
    suffix = f"x{n}"
    name = (".".join(["a" * 63] * 3) + "." + "a" * 61)[: 253 - len(suffix)] + suffix
    obj = pod(name if rng.random() < 0.5 else f"e-{n}")
    meta, spec = obj["metadata"], obj["spec"]
    meta["labels"] = {f"{QUALIFIED_PREFIX}/{'k' * 63}": "v" * 63, "app": "z" * 63}
    choice = rng.randrange(4)
    if choice == 0:  # tolerations, many (the scheduler walks them per node)
        spec["tolerations"] = [
            {"key": f"example.com/t{i}", "operator": "Equal", "value": str(i), "effect": "NoSchedule"}
            for i in range(rng.choice([100, 1000, 10000]))
        ]
    elif choice == 1:  # quantities at int64's limit (in the unit ksched counts): unschedulable
        spec["containers"][0]["resources"] = {
            "requests": {
                "cpu": rng.choice(["9223372036854775807m", "9223372036854775m", "9223372036854775"]),
                "memory": rng.choice(["9223372036854775807", "7Ei", "9223372036854775807000m"]),
            },
        }
    elif choice == 2:  # the most extended resources a pod may ask for, names at their longest
        names = {f"{RESOURCE_PREFIX}/{'r' * 59}{i:04d}": "1" for i in range(31)}
        spec["containers"][0]["resources"] = {"requests": names, "limits": dict(names)}
    else:  # an annotation at the size limit, with bytes terminals interpret
        head = "\0\x1b[2J\u202e"  # the limit counts bytes: 8 of them here, and the key's 1
        meta["annotations"] = {"a": head + "x" * (262144 - 1 - len(head.encode()))}
    return entry("valid_extreme", n, obj, field=None, code=201)


def valid_overflow(rng: random.Random, n: int) -> ObjectEntry:
    """Quantities the API server accepts but whose milli-value passes int64 (``8Ei`` cores): upstream's
    ``MilliValue`` wraps silently; ksched reports the pod with a SchedulerError naming the value. The
    run sends them (they must not break anything); the property test, which asks for Unschedulable,
    does not."""
    obj = pod(f"o-{n}")
    cpu = rng.choice(["9223372036854775807", "8Ei", "9300000000000000k"])
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": rng.choice(["8Ei", "1"])}}
    return entry("valid_overflow", n, obj, field=None, code=201)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("truncated_json", True, truncated_json),
    Mutation("metadata_type", True, metadata_type),
    Mutation("body_type", True, body_type),
    Mutation("kind_mismatch", True, kind_mismatch),
    Mutation("namespace_mismatch", True, namespace_mismatch),
    Mutation("no_name", True, no_name),
    Mutation("strict_unknown", True, strict_unknown),
    Mutation("valid_extreme", True, valid_extreme),
    Mutation("valid_overflow", True, valid_overflow),
    Mutation("wrong_types", True, wrong_types),
    Mutation("out_of_range", True, out_of_range),
    Mutation("hostile_name", True, hostile_name),
    Mutation("huge_labels", True, huge_labels),
    Mutation("huge_annotations", True, huge_annotations),
    Mutation("invalid_quantity", True, invalid_quantity),
    Mutation("broken_selector", True, broken_selector),
)


def mutations(*, ready_only: bool) -> tuple[Mutation, ...]:
    return tuple(m for m in MUTATIONS if m.ready or not ready_only)


def corpus_variant(rng: random.Random, n: int, source: ObjectEntry) -> ObjectEntry:
    """A corpus entry again, under a fresh name unless its name is what it tests: an object the
    cluster wrongly accepted (or rightly, for a valid one) must not make the next copy a 409."""
    if not isinstance(source.obj, dict) or (source.field or "").startswith(NAME_FIELDS):
        return source
    meta = source.obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return source
    obj = json.loads(source.body)
    limit = 63 if source.kind == "Namespace" else 253
    suffix = f"x{n}"
    obj["metadata"]["name"] = meta["name"][: limit - len(suffix)] + suffix
    body = json.dumps(obj, ensure_ascii=False).encode()
    return ObjectEntry(
        source.file,
        f"{source.id}-{n}",
        source.kind,
        body,
        source.namespace,
        source.field,
        source.code,
        source.query,
        source.ready,
        obj,
    )


def stream(seed: int, corpus: Sequence[ObjectEntry], *, ready_only: bool) -> Iterator[ObjectEntry]:
    """Objects without end: each step is a corpus entry's variant (one in four) or a mutation."""
    rng = random.Random(seed)
    classes = mutations(ready_only=ready_only)
    pool = [e for e in corpus if e.ready or not ready_only]
    n = 0
    while True:
        n += 1
        if pool and rng.random() < 0.25:
            yield corpus_variant(rng, n, rng.choice(pool))
        else:
            yield rng.choice(classes).make(rng, n)


def generated(*, ready_only: bool) -> st.SearchStrategy[ObjectEntry]:
    """Hypothesis: one object of any class (shrinks towards the first class and a fixed stream)."""
    return st.builds(
        lambda m, r, n: m.make(r, n),
        st.sampled_from(mutations(ready_only=ready_only)),
        st.randoms(use_true_random=False),
        st.integers(min_value=1, max_value=10**6),
    )


def bomb_text(kind: str, params: dict[str, Any]) -> str:
    """The file a bomb recipe names: a YAML alias bomb, deep nesting, or an oversized document."""
    if kind == "alias_bomb":
        levels, width = int(params.get("levels", 9)), int(params.get("width", 9))
        lines = ['a0: &a0 ["lol"]']
        for i in range(1, levels + 1):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
        return _wrap(params, "\n".join(lines) + f"\nvalue: *a{levels}\n")
    if kind == "deep":
        depth = int(params.get("depth", 10000))
        return _wrap(params, "value: " + "[" * depth + "]" * depth + "\n")
    if kind == "oversized":
        size = int(float(params.get("megabytes", 50)) * 2**20)
        return _wrap(params, "# " + "x" * size + "\n")
    raise ValueError(f"unknown bomb kind {kind!r}")


def _wrap(params: dict[str, Any], body: str) -> str:
    """A bomb inside the document its target reads (the hostile keys are extra, top-level)."""
    target = params.get("target", "config")
    if target == "config":
        return "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + body
    if target == "explain-pod":
        return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n" + body
    return "apiVersion: v1\nkind: List\nitems: []\n" + body


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj.setdefault(part, {})
    obj[last] = value


def _dns_subdomain(name: str) -> bool:
    import re

    return (
        len(name) <= 253
        and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name) is not None
    )
