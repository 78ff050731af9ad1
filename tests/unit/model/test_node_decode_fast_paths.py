"""``node_from_dict``'s shortcuts for the common shape keep the long way's answers and errors.

Allocatable quantities are remembered per (resource, text) and conditions of the usual shape are
read without building field paths; a malformed value still fails, every time, naming its field.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.errors import ObjectError, QuantityError
from ksched.model.node import node_from_dict
from tests.builders import make_node


def _with_conditions(conditions: Any) -> dict[str, Any]:
    raw = make_node("n1", cpu="4", memory="8Gi", pods=110)
    raw["status"]["conditions"] = conditions
    return raw


def test_remembered_allocatable_is_the_parsed_one() -> None:
    for _ in range(2):  # the second pass answers from the memo
        node = node_from_dict(make_node("n1", cpu="2", memory="2", pods="2"))
        assert dict(node.allocatable) == {"cpu": 2000, "memory": 2, "pods": 2}


def test_a_bad_allocatable_fails_every_time_with_its_field() -> None:
    for _ in range(2):  # a failure is never remembered
        with pytest.raises(QuantityError, match=r"status\.allocatable\.cpu"):
            node_from_dict(make_node("n1", cpu="lots", memory="1Gi"))


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        pytest.param(
            [{"type": "Ready", "status": "True", "reason": "KubeletReady"}], (("Ready", "True"),), id="usual"
        ),
        pytest.param([{"type": "Ready"}], (("Ready", ""),), id="status absent"),
        pytest.param([], (), id="empty"),
        pytest.param(None, (), id="absent"),
    ],
)
def test_conditions(conditions: Any, want: tuple[tuple[str, str], ...]) -> None:
    assert node_from_dict(_with_conditions(conditions)).conditions == want


@pytest.mark.parametrize(
    ("conditions", "field"),
    [
        pytest.param({}, "status.conditions", id="not a list"),
        pytest.param([{"type": "Ready", "status": "True"}, "x"], "status.conditions[1]", id="not an object"),
        pytest.param([{"type": 3, "status": "True"}], "status.conditions[0].type", id="type"),
        pytest.param([{"type": "Ready", "status": True}], "status.conditions[0].status", id="status"),
    ],
)
def test_malformed_conditions_name_the_field(conditions: Any, field: str) -> None:
    with pytest.raises(ObjectError) as err:
        node_from_dict(_with_conditions(conditions))
    assert field in str(err.value)
