"""The xqa command: help, unknown commands, user errors without tracebacks."""
from __future__ import annotations

import subprocess
import sys

import pytest

from xqa.cli import COMMANDS, main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for words in COMMANDS:
        assert " ".join(words) in out


def test_unknown_command_and_bare_group(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert main(["index"]) == 2
    err = capsys.readouterr().err
    assert "sparse" in err and "dense" in err


def test_every_registered_command_parses_help():
    """Each implemented subcommand builds its parser (a broken module shows up here)."""
    import importlib

    missing = []
    for words, (module, _) in COMMANDS.items():
        try:
            mod = importlib.import_module(f"xqa.commands.{module}")
        except ModuleNotFoundError as e:
            if e.name == f"xqa.commands.{module}":
                missing.append(" ".join(words))
                continue
            raise
        with pytest.raises(SystemExit) as e:
            main([*words, "--help"])
        assert e.value.code == 0, words
    assert len(missing) < len(COMMANDS)


def test_user_error_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "xqa.cli", "train", "tokenizer", "--passages",
                          str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "tok")],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "nope.jsonl: no such passage file" in out.stderr and "Traceback" not in out.stderr
