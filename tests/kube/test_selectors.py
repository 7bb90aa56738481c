"""Label and field selector grammar, matching and errors (apimachinery labels/fields)."""

from __future__ import annotations

import pytest

from tests.kube.emulator.selectors import SelectorError, parse_fields, parse_labels


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a=1", {}, False),
        ("a!=1", {}, True),  # != matches objects without the label
        ("a notin (1,2)", {"a": "3"}, True),
        ("a notin (1,2)", {}, True),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a in (1,2)", {}, False),
        ("a,!b", {"a": "x"}, True),
        ("a,!b", {"a": "x", "b": ""}, False),
        ("example.com/tier=front", {"example.com/tier": "front"}, True),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "4"}, False),
        ("n>3", {"n": "x"}, False),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selector_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_labels(selector).matches(labels) is expected


@pytest.mark.parametrize("selector", ["a in 1", "a=(1)", "a=b c", "a=-x-", "!", "a in (1", "n>x"])
def test_bad_label_selectors_are_refused(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_labels(selector)


def test_field_selector_terms_and_escapes() -> None:
    sel = parse_fields(r"metadata.name=a\,b,status.phase!=Running")
    assert sel.matches({"metadata.name": "a,b", "status.phase": "Pending"})
    assert not sel.matches({"metadata.name": "a,b", "status.phase": "Running"})
    assert sel.value_of("metadata.name") == "a,b"
    assert parse_fields("spec.nodeName==n1").matches({"spec.nodeName": "n1"})


def test_field_selector_without_operator_is_refused() -> None:
    with pytest.raises(SelectorError, match="can't understand 'oops'"):
        parse_fields("metadata.name=a,oops")
