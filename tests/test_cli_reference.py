"""docs/cli.md is what the commands' parsers say today."""
from __future__ import annotations

import argparse
import sys

import pytest

from xqa.cli import ALL
from xqa.tools import cli_reference


@pytest.mark.skipif(sys.version_info[:2] != cli_reference.PYTHON,
                    reason=f"docs/cli.md is laid out by Python {cli_reference.PYTHON}'s argparse")
def test_the_cli_reference_is_current():
    page = cli_reference.PAGE.read_text(encoding="utf-8")
    assert page == cli_reference.render(), "docs/cli.md is stale: run python -m xqa.tools.cli_reference"
    assert cli_reference.main(["--check"]) == 0


def test_the_reference_has_every_command_and_option(monkeypatch):
    from xqa.cli import build_parser

    page = cli_reference.render()
    for words in ALL:
        assert f"### xqa {' '.join(words)}\n" in page
        for action in build_parser(words)._actions:
            for flag in action.option_strings:
                if action.help != argparse.SUPPRESS:
                    assert flag in page, (words, flag)
    # the page does not depend on the terminal it is made in, nor on $XQA_CONFIG
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("XQA_CONFIG", "/elsewhere/pipeline.json")
    assert cli_reference.render() == page


def test_a_stale_page_is_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_reference, "PAGE", tmp_path / "cli.md")
    (tmp_path / "cli.md").write_text("# CLI reference\n(an old page)\n", encoding="utf-8")
    assert cli_reference.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert cli_reference.main([]) == 0 and cli_reference.main(["--check"]) == 0
