"""metav1.LabelSelector parsing and the plain-Python matcher.

Cases follow upstream ``TestLabelSelectorAsSelector``
(``staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers_test.go``) and the rules of
``LabelSelectorAsSelector`` / ``labels.NewRequirement`` it relies on: nil matches nothing, ``{}``
matches everything, matchLabels and matchExpressions are ANDed, ``In``/``NotIn`` need values,
``Exists``/``DoesNotExist`` take none, any other operator is an error.
"""

from __future__ import annotations

import pytest

from ksched.errors import ObjectError
from ksched.model.selectors import (
    EVERYTHING,
    LabelSelector,
    Requirement,
    parse_label_selector,
    selector_matches,
)

OBJ = "Pod default/p"
FIELD = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
BAZ_IN = {"key": "baz", "operator": "In", "values": ["qux", "norf"]}


def parse(raw):
    return parse_label_selector(raw, OBJ, FIELD)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(None, None, id="nil selector is None (Nothing)"),
        pytest.param({}, EVERYTHING, id="empty selector is Everything"),
        pytest.param(
            {"matchLabels": {"foo": "bar"}}, LabelSelector((("foo", "bar"),), ()), id="matchLabels only"
        ),
        pytest.param(
            {"matchExpressions": [BAZ_IN]},
            LabelSelector((), (Requirement("baz", "In", ("qux", "norf")),)),
            id="matchExpressions only",
        ),
        pytest.param(
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [BAZ_IN]},
            LabelSelector((("foo", "bar"),), (Requirement("baz", "In", ("qux", "norf")),)),
            id="both, ANDed",
        ),
        pytest.param(
            {"matchLabels": {"b": "2", "a": "1"}},
            LabelSelector((("a", "1"), ("b", "2")), ()),
            id="matchLabels sorted so equal selectors hash equal",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]},
            LabelSelector((), (Requirement("k", "DoesNotExist", ()),)),
            id="DoesNotExist without values",
        ),
        pytest.param(
            {"matchLabels": {"example.com/app": ""}},
            LabelSelector((("example.com/app", ""),), ()),
            id="prefixed key and empty value are valid",
        ),
    ],
)
def test_parse(raw, want) -> None:
    assert parse(raw) == want


@pytest.mark.parametrize(
    ("raw", "field", "text"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "baz", "operator": "Exists", "values": ["qux", "norf"]}]},
            ".matchExpressions[0].values",
            "must be empty",
            id="Exists with values (upstream's error case)",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "baz", "operator": "DoesNotExist", "values": ["x"]}]},
            ".matchExpressions[0].values",
            "must be empty",
            id="DoesNotExist with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "baz", "operator": "In"}]},
            ".matchExpressions[0].values",
            "can't be empty",
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "baz", "operator": "NotIn", "values": []}]},
            ".matchExpressions[0].values",
            "can't be empty",
            id="NotIn with empty values",
        ),
        pytest.param(
            {
                "matchExpressions": [
                    {"key": "a", "operator": "In", "values": ["x"]},
                    {"key": "b", "operator": "Gt", "values": ["1"]},
                ]
            },
            ".matchExpressions[1].operator",
            "'Gt' is not a valid label selector operator",
            id="Gt is a node selector operator, not a label selector one",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]},
            ".matchExpressions[0].operator",
            "not a valid",
            id="operators are case-sensitive",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "", "operator": "Exists"}]},
            ".matchExpressions[0].key",
            "invalid label key",
            id="empty key",
        ),
        pytest.param(
            {"matchLabels": {"bad key": "x"}}, ".matchLabels", "invalid label key", id="key with a space"
        ),
        pytest.param(
            {"matchLabels": {"app": "-x"}}, ".matchLabels['app']", "invalid label value", id="bad value"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x" * 64]}]},
            ".matchExpressions[0].values[0]",
            "invalid label value",
            id="value longer than 63",
        ),
        pytest.param({"matchLabels": ["a"]}, ".matchLabels", "expected an object", id="wrong type"),
    ],
)
def test_parse_errors_name_object_and_field(raw, field, text) -> None:
    with pytest.raises(ObjectError) as info:
        parse(raw)
    assert info.value.obj == OBJ
    assert info.value.field == FIELD + field
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("raw", "labels", "want"),
    [
        pytest.param(None, {}, False, id="nil matches nothing, not even no labels"),
        pytest.param(None, {"foo": "bar"}, False, id="nil matches nothing"),
        pytest.param({}, {}, True, id="empty matches no labels"),
        pytest.param({}, {"foo": "bar"}, True, id="empty matches everything"),
        pytest.param({"matchLabels": {"foo": "bar"}}, {"foo": "bar", "x": "y"}, True, id="foo=bar"),
        pytest.param({"matchLabels": {"foo": "bar"}}, {"foo": "baz"}, False, id="foo=bar wrong value"),
        pytest.param({"matchLabels": {"foo": "bar"}}, {}, False, id="foo=bar absent"),
        pytest.param({"matchLabels": {"foo": ""}}, {}, False, id="foo= needs the key present"),
        pytest.param({"matchExpressions": [BAZ_IN]}, {"baz": "norf"}, True, id="baz in (norf,qux)"),
        pytest.param({"matchExpressions": [BAZ_IN]}, {"baz": "x"}, False, id="baz in: other value"),
        pytest.param({"matchExpressions": [BAZ_IN]}, {}, False, id="baz in: absent"),
        pytest.param(
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [BAZ_IN]},
            {"foo": "bar", "baz": "qux"},
            True,
            id="ANDed: both hold",
        ),
        pytest.param(
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [BAZ_IN]},
            {"foo": "bar"},
            False,
            id="ANDed: one fails",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {},
            True,
            id="NotIn matches an absent key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
            id="NotIn rejects a listed value",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="Exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
            {"a": ""},
            False,
            id="DoesNotExist with key present",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True, id="DoesNotExist"
        ),
    ],
)
def test_matches(raw, labels, want) -> None:
    sel = parse(raw)
    assert selector_matches(sel, labels) is want
    if sel is not None:
        assert sel.matches(labels) is want


def test_nil_and_empty_are_distinct_and_hashable() -> None:
    assert parse(None) is None
    assert parse({}) == EVERYTHING and EVERYTHING.empty
    one, two = parse({"matchLabels": {"a": "1", "b": "2"}}), parse({"matchLabels": {"b": "2", "a": "1"}})
    assert one == two and hash(one) == hash(two)
