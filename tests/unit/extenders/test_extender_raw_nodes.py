"""Node objects for extenders that are not node-cache-capable: the JSON the node informer
received (without managedFields), kept only while the cache holds the record decoded from it."""

from __future__ import annotations

import orjson

from ksched.kube.events import Deleted, Relisted, Upserted
from ksched.model.node import node_from_dict
from ksched.scheduler.extenders import RawNodes, wire
from tests.builders import make_node, pod


def raw(name: str, note: str) -> dict:
    obj = make_node(name, cpu=2, memory="1Gi", pods=10)
    obj["metadata"]["annotations"] = {"note": note}
    obj["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    return obj


def items(store: wire.NodeObjects, nodes: list) -> list[dict]:
    return orjson.loads(wire.extender_args(pod("p"), nodes, node_cache_capable=False, objects=store))[
        "Nodes"
    ]["items"]


def test_the_informer_json_is_sent_while_its_record_lasts() -> None:
    raws = RawNodes()
    store = wire.NodeObjects(raws)
    a = raws.decode(raw("a", "first"))
    (sent,) = items(store, [a])
    assert sent["metadata"]["annotations"] == {"note": "first"}
    assert "managedFields" not in sent["metadata"]
    a2 = raws.decode(raw("a", "second"))
    assert items(store, [a2])[0]["metadata"]["annotations"] == {"note": "second"}
    # A record the store did not decode (or an older one) is rebuilt from the record.
    rebuilt = items(store, [a])[0]
    assert "annotations" not in rebuilt["metadata"] and rebuilt["metadata"]["name"] == "a"
    other = node_from_dict(make_node("b", cpu=1, memory="1Gi", pods=1))
    assert items(store, [other])[0]["metadata"]["name"] == "b"


def test_deleted_and_unlisted_nodes_are_forgotten() -> None:
    raws = RawNodes()
    seen: list = []
    sink = raws.sink(seen.append)
    a, b = raws.decode(raw("a", "x")), raws.decode(raw("b", "y"))
    assert len(raws) == 2
    sink(Deleted("nodes", a))
    assert len(raws) == 1 and raws.encoded(a) is None and raws.encoded(b) is not None
    c = raws.decode(raw("c", "z"))
    sink(Relisted("nodes", (c,)))
    assert len(raws) == 1 and raws.encoded(c) is not None
    sink(Upserted("nodes", c))
    assert [type(e).__name__ for e in seen] == ["Deleted", "Relisted", "Upserted"]
