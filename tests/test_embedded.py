"""The embedded build's profiles and its refusal to mix them."""
from __future__ import annotations

import json

import pytest

from xqa.embedded import PROFILES, Build
from xqa.errors import XqaError


def test_long_profile_is_the_default_with_a_longer_reader():
    default, long = PROFILES["default"], PROFILES["long"]
    assert long.reader_steps > default.reader_steps
    assert {k: v for k, v in vars(long).items() if k != "reader_steps"} == \
        {k: v for k, v in vars(default).items() if k != "reader_steps"}


def test_a_reader_of_another_profile_is_not_silently_reused(tmp_path):
    state = tmp_path / "reader" / "checkpoint" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"step": PROFILES["default"].reader_steps, "done": True}))
    assert Build(tmp_path, profile="default")._reader_finished()
    with pytest.raises(XqaError, match="trained 1300 steps, but profile 'long' trains 4000"):
        Build(tmp_path, profile="long")._reader_finished()
    state.write_text(json.dumps({"step": 10, "done": False}))         # unfinished: resumed, not an error
    assert not Build(tmp_path, profile="long")._reader_finished()
