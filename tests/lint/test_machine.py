"""lint's JSON text (machine.dumps): the same bytes json.dumps(indent=2, ensure_ascii=False)
writes, for every value the documents can hold and for those it leaves to json.dumps."""

from __future__ import annotations

import json
from enum import IntEnum

import pytest

from probetui.lint.machine import dumps


class _Code(IntEnum):
    ONE = 1


@pytest.mark.parametrize(
    "doc",
    [
        {},
        [],
        {"a": {}, "b": [], "c": [{}], "d": [[]]},
        {"s": 'quo"te \\ back\nline\ttab \x01 é ✓ 𝄞', "k\u2028": "\u2029"},
        {"n": None, "t": True, "f": False, "i": -3, "big": 2**70, "x": 1.5, "e": 1e-300},
        {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "z": -0.0},
        {"tuple": (1, "a", (2,)), "nested": {"deep": [{"x": [1, [2, [3]]]}]}},
        [1, "two", None, [True], {"k": "v"}],
        "plain",
        7,
        # left to json.dumps: keys it converts, and int subclasses
        {2: "a", None: "b", True: "c", 1.5: "d"},
        {"code": _Code.ONE},
    ],
)
def test_dumps_writes_what_json_dumps_writes(doc: object) -> None:
    assert dumps(doc) == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
