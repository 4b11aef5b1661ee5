"""Write docs/cli.md, the CLI reference, from the commands' own argparse parsers.

    python -m xqa.tools.cli_reference            # rewrite docs/cli.md
    python -m xqa.tools.cli_reference --check    # exit 1 when docs/cli.md is stale

``tests/test_cli_reference.py`` fails when the page differs from what this module
renders, so a changed option, default or help text is a changed page.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
WIDTH = 100  # the help texts' line width on the page (a terminal's width would vary)
# The page is written with this Python's argparse; other versions lay out help slightly differently.
PYTHON = (3, 11)

HEADER = """\
# CLI reference

Every `xqa` command with its options, as `xqa <command> --help` prints them.
Generated from the commands' argparse parsers by `python -m xqa.tools.cli_reference`;
`tests/test_cli_reference.py` fails when this page is stale. The commands' defaults
are their own; a pipeline command reads the rest from `pipeline.json`
([pipeline-json.md](pipeline-json.md)).
"""


def _anchor(words: tuple[str, ...]) -> str:
    return "xqa-" + "-".join(words)


def _table(commands: dict[tuple[str, ...], tuple[str, str]]) -> list[str]:
    rows = ["| command | what it does |", "| --- | --- |"]
    rows += [f"| [`xqa {' '.join(w)}`](#{_anchor(w)}) | {help_} |" for w, (_, help_) in commands.items()]
    return rows


def render() -> str:
    """The whole page, from :data:`xqa.cli.COMMANDS` and :data:`xqa.cli.TOOLS`."""
    from xqa.cli import COMMANDS, TOOLS, build_parser

    lines = [HEADER, "## Commands", "", *_table(COMMANDS), "",
             "## Tooling", "",
             "Benchmarks, diagnostics and reports that measure xqa; the user's commands never need them.",
             "", *_table(TOOLS), ""]
    for words in (*COMMANDS, *TOOLS):
        text = build_parser(words, width=WIDTH).format_help().rstrip()
        lines += [f'<a id="{_anchor(words)}"></a>', "", f"### xqa {' '.join(words)}", "", "```text", text, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xqa.tools.cli_reference", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether docs/cli.md is current")
    args = parser.parse_args(argv)
    page = render()
    current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
    if args.check:
        if page != current:
            print(f"{PAGE} is stale: run python -m xqa.tools.cli_reference", file=sys.stderr)
            return 1
        return 0
    if page != current:
        PAGE.write_text(page, encoding="utf-8")
        print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
