"""Binding ids and keys: the spellings accepted, and the clashes refused."""

from __future__ import annotations

import pytest

from probetui.config import ConfigError
from probetui.config.keymap import check_clashes, default_keys, parse_keys


def test_the_app_s_own_bindings_do_not_clash() -> None:
    check_clashes({}, {})
    assert default_keys()["probetui.probe-now"] == "t"


@pytest.mark.parametrize("name", ["probetui.probe-now", "probetui.probe_now", "probe_now"])
def test_an_id_as_the_app_writes_it_or_as_k9s_users_do(name: str) -> None:
    assert parse_keys("f", {name: "ctrl+t"}) == {"probetui.probe-now": "ctrl+t"}


def test_keys_are_normalized_as_textual_names_them() -> None:
    assert parse_keys("f", {"help": ["?", "F1"]}) == {"probetui.help": "question_mark,f1"}
    assert parse_keys("f", {"quit": "Ctrl+Q, x"}) == {"probetui.quit": "ctrl+q,x"}


def test_two_spellings_of_one_key_clash() -> None:
    keymap = parse_keys("f", {"probe_now": "?"})
    with pytest.raises(ConfigError) as e:
        check_clashes(keymap, {"probetui.probe-now": "my.yaml"})
    assert str(e.value) == (
        'my.yaml: keys."probetui.probe-now": key question_mark is also probetui.help\'s (pick '
        "another key, or move probetui.help to another key too)"
    )


def test_swapping_two_keys_is_no_clash_and_help_may_reuse_screen_keys() -> None:
    keymap = parse_keys("f", {"probe_now": "f", "follow": "t", "help-close": "escape,q"})
    check_clashes(keymap, dict.fromkeys(keymap, "f"))


def test_an_id_given_twice() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        parse_keys("f", {"probe_now": "x", "probetui.probe-now": "y"})
