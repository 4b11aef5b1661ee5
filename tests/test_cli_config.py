"""Options made from a config dataclass (xqa.cli_config): the flags, their help and defaults,
the config made back from them, and --settings FILE.json."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field

import pytest

from xqa.cli import HelpFormatter, build_parser, main
from xqa.cli_config import CommandParser, ConfigCommand


@dataclass
class Toy:
    out: str = field(metadata={"help": "where it goes", "metavar": "DIR"})
    size: int = field(default=3, metadata={"help": "how many"})
    rate: float | None = field(default=None, metadata={"help": "how fast (default: as fast as it goes)"})
    mode: str = field(default="a", metadata={"choices": ("a", "b"), "help": "which way: 50% a, 50% b"})
    names: list[str] = field(default_factory=list, metadata={"help": "names to use"})
    fast: bool = field(default=False, metadata={"help": "go fast"})
    checks: bool = field(default=True, metadata={"help": "skip the checks"})
    progress: bool = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})
    seed: int = 0
    secret: str = "kept"


def _parser(command: ConfigCommand) -> argparse.ArgumentParser:
    p = CommandParser(prog="toy", formatter_class=lambda prog: HelpFormatter(prog, width=100))
    command.add_arguments(p)
    return p


TOY = ConfigCommand(Toy, settings=True, exclude=("secret",), aliases={"size": ("--count",)},
                    groups={"input": ("out", "names"), "how": ("size", "rate", "mode", "fast", "checks", "progress",
                                                               "seed")})


def test_flags_types_defaults_and_help_come_from_the_fields():
    p = _parser(TOY)
    help_ = p.format_help()
    assert "--out DIR" in help_ and "where it goes" in help_
    assert "how many (default: 3)" in help_
    assert "how fast (default: as fast as it goes)\n" in help_          # None: no default appended
    assert "--mode {a,b}" in help_ and "50% a, 50% b (default: a)" in help_  # % needs no escaping
    assert "--names [NAMES ...]" in help_ and "names to use\n" in help_
    assert "--fast" in help_ and "--no-checks" in help_ and "--quiet" in help_
    assert "skip the checks\n" in help_ and "no progress bars\n" in help_
    assert "(default: True)" not in help_ and "(default: False)" not in help_
    assert "--seed SEED\n" in help_          # a field without help: a bare option, as argparse shows it
    # groups in order, the excluded field and the hidden alias absent
    body = help_[help_.index("\noptions:"):]
    assert body.index("input:") < body.index("--out DIR") < body.index("how:") < body.index("--size SIZE")
    assert "--secret" not in help_ and "--count" not in help_
    assert "--settings FILE.json" in help_ and '"checks": false for --no-checks' in help_
    assert '"progress": false for --quiet' in help_


def test_the_config_comes_back_from_the_command_line():
    p = _parser(TOY)
    cfg = TOY.config(p.parse_args(["--out", "o"]), secret="given")
    assert cfg == Toy(out="o", secret="given")
    cfg = TOY.config(p.parse_args(["--out", "o", "--count", "7", "--rate", "0.5", "--mode", "b", "--names", "x", "y",
                                   "--fast", "--no-checks", "--quiet", "--seed", "2"]))
    assert cfg == Toy(out="o", size=7, rate=0.5, mode="b", names=["x", "y"], fast=True, checks=False,
                      progress=False, seed=2)


def test_required_choices_and_types_are_enforced(capsys):
    p = _parser(TOY)
    with pytest.raises(SystemExit):
        p.parse_args([])
    assert "the following arguments are required: --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        p.parse_args(["--out", "o", "--mode", "c"])
    assert "invalid choice: 'c'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        p.parse_args(["--out", "o", "--size", "many"])
    assert "invalid int value" in capsys.readouterr().err


def test_every_field_is_placed_or_left_out():
    with pytest.raises(ValueError, match="not placed.*secret"):
        ConfigCommand(Toy, groups={None: ("out", "size", "rate", "mode", "names", "fast", "checks", "progress",
                                          "seed")})
    with pytest.raises(ValueError, match="no field colour"):
        ConfigCommand(Toy, help={"colour": "red"})


def test_settings_file_values_are_overridden_by_the_command_line(tmp_path):
    settings = tmp_path / "toy.json"
    settings.write_text(json.dumps({"out": "from-file", "size": 5, "checks": False, "names": ["n"], "rate": None}))
    p = _parser(TOY)
    cfg = TOY.config(p.parse_args(["--settings", str(settings)]))     # --out given by the file
    assert cfg == Toy(out="from-file", size=5, checks=False, names=["n"])
    cfg = TOY.config(p.parse_args([f"--settings={settings}", "--size", "9", "--out", "flag"]))
    assert (cfg.out, cfg.size, cfg.checks) == ("flag", 9, False)
    # the parser keeps its own defaults for the next parse
    assert TOY.config(p.parse_args(["--out", "o"])) == Toy(out="o")


@pytest.mark.parametrize("content, message", [
    ({"colour": 1}, "unknown setting 'colour'; the settings of this command are out, names, size"),
    ({"size": "five"}, "setting 'size' (--size) must be an integer, got \"five\""),
    ({"size": True}, "setting 'size' (--size) must be an integer, got true"),
    ({"rate": "fast"}, "setting 'rate' (--rate) must be a number"),
    ({"mode": "c"}, "setting 'mode' (--mode) must be one of a, b, got 'c'"),
    ({"names": "x"}, "setting 'names' (--names) must be a list"),
    ({"checks": "no"}, "setting 'checks' (--no-checks) must be true or false"),
    ({"out": None}, "setting 'out' (--out) may not be null"),
    (["out", "o"], "the settings must be a JSON object"),
])
def test_a_bad_settings_file_is_a_usage_error_naming_file_and_key(tmp_path, capsys, content, message):
    settings = tmp_path / "bad.json"
    settings.write_text(json.dumps(content))
    with pytest.raises(SystemExit) as e:
        _parser(TOY).parse_args(["--settings", str(settings), "--out", "o"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{settings}: {message}" in err, err


def test_a_missing_or_broken_settings_file_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _parser(TOY).parse_args(["--settings", str(tmp_path / "none.json")])
    assert f"{tmp_path / 'none.json'}: no such settings file" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{out: 1")
    with pytest.raises(SystemExit):
        _parser(TOY).parse_args(["--settings", str(tmp_path / "broken.json")])
    assert f"{tmp_path / 'broken.json'}: not JSON" in capsys.readouterr().err


def test_index_sparse_gives_the_same_config_from_flags_as_from_a_settings_file(tmp_path):
    from xqa.commands import index_sparse
    from xqa.indexes import SparseIndexConfig

    flags = ["--passages", "p.jsonl", "--out", "idx", "--lang", "fi", "--threads", "1", "--batch-size", "50",
             "--no-optimize", "--cross-script", "--stop-fraction", "0.2", "--quiet", "--overwrite"]
    settings = tmp_path / "sparse.json"
    settings.write_text(json.dumps({"passages": "p.jsonl", "out": "idx", "lang": "fi", "threads": 1,
                                    "batch_size": 50, "optimize": False, "cross_script": True,
                                    "stop_fraction": 0.2, "progress": False, "overwrite": True}))
    parser = build_parser(("index", "sparse"))
    from_flags = index_sparse.COMMAND.config(parser.parse_args(flags))
    from_file = index_sparse.COMMAND.config(build_parser(("index", "sparse")).parse_args(["--settings", str(settings)]))
    assert from_flags == from_file == SparseIndexConfig(
        passages="p.jsonl", out="idx", lang="fi", threads=1, batch_size=50, optimize=False, cross_script=True,
        stop_fraction=0.2, progress=False, overwrite=True)


def test_train_lexical_size_and_its_old_spelling(tmp_path):
    from xqa.commands import train_lexical

    base = ["--passages", "p", "--bm25", "b", "--out", "o"]
    parse = build_parser(("train", "lexical")).parse_args
    assert train_lexical.config(parse([*base, "--size", "small"])).size == "small"
    assert train_lexical.config(parse([*base, "--config", "small"])).size == "small"   # hidden alias
    cfg = train_lexical.config(parse(base))
    assert (cfg.size, cfg.pooling, cfg.bf16, cfg.mask_false_negatives, cfg.progress) == (None, "mean", True, True, True)
    settings = tmp_path / "lexical.json"
    settings.write_text(json.dumps({"passages": "p", "bm25": "b", "out": "o", "size": "small", "bf16": False}))
    from_file = train_lexical.config(parse(["--settings", str(settings), "--lr", "0.01"]))
    assert from_file == train_lexical.config(parse([*base, "--size", "small", "--no-bf16", "--lr", "0.01"]))


def test_a_settings_error_goes_through_the_cli(tmp_path, capsys):
    settings = tmp_path / "dense.json"
    settings.write_text(json.dumps({"model": "m", "passages": "p", "out": "o", "index": "lsh"}))
    with pytest.raises(SystemExit) as e:
        main(["index", "dense", "--settings", str(settings)])
    assert e.value.code == 2
    assert f"xqa index dense: error: {settings}: setting 'index' (--index) must be one of flat, hnsw, ivfpq" \
        in capsys.readouterr().err
