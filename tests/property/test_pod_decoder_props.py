"""The pods informer's :class:`PodDecoder` gives exactly what :func:`pod_from_dict` gives.

The decoder remembers a pending pod's spec and, when the next event for that uid has the same spec
but for ``nodeName``, reads only metadata and status. A run of events for a few uids (pending,
bound, relabelled, deleted, its requests or name changed, and malformed versions from the
``test_malformed_objects`` strategy) must decode event by event to the same record, or fail with
the same error, as a full decode.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ksched.errors import ObjectError
from ksched.model.pod import pod_from_dict
from ksched.model.pod_decoder import PodDecoder
from tests.property.test_malformed_objects import base_pod, mutated

valid_event_st = st.fixed_dictionaries(
    {
        "uid": st.sampled_from(["uid-p", "uid-q"]),
        "name": st.sampled_from(["p", "p", "other"]),
        "node": st.sampled_from([None, None, "", "n1", "n2"]),
        "label": st.sampled_from(["x", "x", "y"]),
        "cpu": st.sampled_from(["100m", "100m", "200m"]),
        "phase": st.sampled_from(["Pending", "Running"]),
        "deleting": st.booleans(),
        "nominated": st.sampled_from([None, "n3"]),
    }
)


def _build(ev: dict[str, Any]) -> dict[str, Any]:
    raw = base_pod(ev["name"])
    raw["metadata"]["uid"] = ev["uid"]
    raw["metadata"]["labels"]["app"] = ev["label"]
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = ev["cpu"]
    if ev["node"] is not None:
        raw["spec"]["nodeName"] = ev["node"]
    raw["status"]["phase"] = ev["phase"]
    if ev["nominated"] is None:
        del raw["status"]["nominatedNodeName"]
    else:
        raw["status"]["nominatedNodeName"] = ev["nominated"]
    if ev["deleting"]:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return raw


event_st = st.one_of(valid_event_st.map(_build), valid_event_st.map(_build), mutated(base_pod(), "p"))


def _outcome(decode: Any, raw: dict[str, Any]) -> Any:
    try:
        return decode(raw)
    except ObjectError as exc:
        return ("error", str(exc))


_BOUND = {**copy.deepcopy(base_pod()), "spec": {**base_pod()["spec"], "nodeName": "n1"}}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@example(events=[base_pod(), _BOUND])  # pending then bound: the remembered spec is used
@example(events=[base_pod(), base_pod("other"), _BOUND])  # same uid, another name: read in full
@given(events=st.lists(event_st, min_size=1, max_size=8))
def test_decoder_equals_full_decode(events: list[dict[str, Any]]) -> None:
    decoder = PodDecoder()
    for raw in events:
        want = _outcome(pod_from_dict, copy.deepcopy(raw))
        before = copy.deepcopy(raw)
        assert _outcome(decoder, raw) == want
        assert raw == before  # the event is left as it came


def test_decoder_reuses_the_spec_of_a_pending_pod_and_forgets_it_once_bound() -> None:
    decoder = PodDecoder()
    pending = decoder(base_pod())
    assert len(decoder) == 1
    bound = decoder(_BOUND)
    assert bound.node_name == "n1" and bound.requests is pending.requests  # taken over, not re-read
    assert len(decoder) == 0


def test_decoder_memory_is_bounded() -> None:
    decoder = PodDecoder(limit=3)
    for i in range(10):
        raw = base_pod(f"p{i}")
        decoder(raw)
    assert len(decoder) <= 3
