"""Manifest text to documents (spec/documents.py): the fast walk most manifests take gives what
PyYAML's constructors give, lines included, and anything it does not build goes to them."""

from __future__ import annotations

import datetime

import pytest

from probetui.spec.documents import documents, line_in
from probetui.spec.errors import LimitExceeded, ManifestError


def test_keys_and_items_carry_their_lines() -> None:
    (doc,) = documents("a: 1\nb:\n  - x\n  - {c: d}\n", "m.yaml")
    assert doc.line == 1
    assert (line_in(doc, "a"), line_in(doc, "b")) == (1, 2)
    assert doc["b"].line == 3
    assert (line_in(doc["b"], 0), line_in(doc["b"], 1)) == (3, 4)
    assert line_in(doc["b"][1], "c") == 4
    assert line_in(doc, "missing") is None


def test_plain_scalars_are_typed_as_yaml_1_1_says() -> None:
    (doc,) = documents(
        "i: 010\nh: 0x1f\nf: 1.5\nb: yes\nn: ~\ns: '10'\nt: 2024-01-02T03:04:05Z\n", "m"
    )
    assert doc == {
        "i": 8,
        "h": 31,
        "f": 1.5,
        "b": True,
        "n": None,
        "s": "10",
        "t": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    }


def test_an_alias_is_the_same_object_as_its_anchor() -> None:
    (doc,) = documents("a: &h {path: /healthz, port: 80}\nb: *h\n", "m")
    assert doc["a"] is doc["b"]
    assert line_in(doc["b"], "port") == 1


def test_merge_keys_and_non_string_keys_are_built_by_pyyaml() -> None:
    (doc,) = documents("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n1: one\n", "m")
    assert doc["m"] == {"x": 1, "y": 3}
    assert doc[1] == "one" and line_in(doc, 1) == 5
    assert line_in(doc["m"], "y") == 4


def test_a_key_set_twice_is_refused_with_its_first_line() -> None:
    with pytest.raises(ManifestError) as err:
        documents("a: 1\nb:\n  c: 1\n  c: 2\n", "m.yaml")
    assert 'key "c" already set in this mapping (first on line 3)' in str(err.value)
    assert err.value.line == 4


def test_a_collection_that_contains_itself_is_refused() -> None:
    # no manifest is one (kubectl's conversion to JSON fails on it), and every walker of the
    # result would recurse for ever
    with pytest.raises(LimitExceeded, match="an alias inside the node it names"):
        documents("a: &r [1, *r]\n", "m")
