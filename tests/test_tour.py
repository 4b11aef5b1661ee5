"""The README's five-minute tour runs, command by command, in order (on the small test build)."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from xqa.cli import main

ROOT = Path(__file__).resolve().parents[1]
NEEDS_CONFIG = {"ask", "search", "answer", "info"}


def tour_commands() -> list[list[str]]:
    """The ``xqa`` commands of the README block between ``<!-- tour ... -->`` and ``<!-- /tour -->``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- tour.*?-->\s*```bash\n(.*?)```\s*<!-- /tour -->", text, re.S)
    assert block, "README.md has no tour block"
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = line.split("  #")[0].strip()
        if line:
            commands.append(shlex.split(line))
    return commands


@pytest.mark.slow
def test_the_readme_tour_runs_in_order(tiny_pipeline, tmp_path, monkeypatch, capsys):
    commands = tour_commands()
    assert [c[1] for c in commands][:2] == ["ask", "ask"] and all(c[0] == "xqa" for c in commands)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "xqa").symlink_to(ROOT / "xqa")   # the tour's paths are relative to the repository
    for argv in commands:
        args = argv[1:]
        if args[0] in NEEDS_CONFIG:
            args += ["--config", str(tiny_pipeline)]
        capsys.readouterr()
        assert main(args) == 0, " ".join(argv)
        out = capsys.readouterr().out
        if "--json" in args:
            assert "answer" in json.loads(out)
    answered = json.loads((tmp_path / "runs" / "tour" / "answers" / "predictions.json").read_text())
    assert len(answered) > 50          # five test questions of each language and side
    assert (tmp_path / "runs" / "tour" / "retrieved.jsonl").is_file()
