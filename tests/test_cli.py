"""The xqa command: help, unknown commands, user errors without tracebacks."""
from __future__ import annotations

import subprocess
import sys

import pytest

from xqa.cli import ALL, COMMANDS, TOOLS, main


def test_help_lists_every_command_and_the_tooling_apart(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    users, tooling = out.split("\ntooling")
    for words in COMMANDS:
        assert f"  {' '.join(words)} " in users
    for words in TOOLS:
        assert f"  {' '.join(words)} " in tooling and f"  {' '.join(words)} " not in users
    # the tooling is what measures xqa; its modules live apart from the user's commands
    assert {w[0] for w in TOOLS} == {"bench", "diagnose", "report", "repro"}
    assert not {w[0] for w in COMMANDS} & {"bench", "diagnose", "report", "repro"}
    assert all(m.startswith("xqa.commands.") for m, _ in COMMANDS.values())
    assert all(m.startswith("xqa.tools.") for m, _ in TOOLS.values())


def test_unknown_command_and_bare_group(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert main(["index"]) == 2
    err = capsys.readouterr().err
    assert "sparse" in err and "dense" in err


def test_every_registered_command_parses_help():
    """Each implemented subcommand builds its parser (a broken module shows up here)."""
    import importlib

    for words, (module, _) in ALL.items():
        mod = importlib.import_module(module)
        assert callable(mod.add_arguments) and callable(mod.run), module
        with pytest.raises(SystemExit) as e:
            main([*words, "--help"])
        assert e.value.code == 0, words


def test_user_error_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "xqa.cli", "train", "tokenizer", "--passages",
                          str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "tok")],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "nope.jsonl: no such passage file" in out.stderr and "Traceback" not in out.stderr
