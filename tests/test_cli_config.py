"""Options made from a config dataclass (xqa.cli_config): the flags, their help and defaults,
the config made back from them, and --settings FILE.json."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field

import pytest

from xqa.cli import HelpFormatter, build_parser, main
from xqa.cli_config import CommandParser, ConfigCommand, Option


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


@dataclass
class Counts:
    k: int = field(default=5, metadata={"min": 1, "help": "how deep"})
    skip: int = field(default=0, metadata={"help": "how many to skip"})
    limit: int | None = field(default=None, metadata={"min": 1, "help": "at most (default: all)"})
    offset: int = field(default=-1, metadata={"min": -1, "help": "-1: the last"})
    port: int = field(default=80, metadata={"max": 65535, "help": "a port"})
    weight: float = field(default=0.5, metadata={"help": "any number"})


def test_numbers_below_their_minimum_are_usage_errors_on_the_line_and_in_settings(tmp_path, capsys):
    """An int is at least 0 unless its field says otherwise; --k 0 for a field of min 1 is refused
    naming the option, not taken as 'the default' or left to fail later."""
    command = ConfigCommand(Counts, settings=True)
    p = _parser(command)
    assert command.config(p.parse_args(["--k", "1", "--skip", "0", "--offset", "-1", "--weight", "-2"])) == \
        Counts(k=1, skip=0, offset=-1, weight=-2.0)
    for argv, flag, low in ((["--k", "0"], "--k", 1), (["--skip", "-3"], "--skip", 0),
                            (["--limit", "0"], "--limit", 1), (["--offset", "-2"], "--offset", -1)):
        with pytest.raises(SystemExit):
            p.parse_args(argv)
        assert f"argument {flag}: must be at least {low}, got {argv[1]}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        p.parse_args(["--port", "65536"])
    assert "argument --port: must be at most 65535, got 65536" in capsys.readouterr().err
    assert command.config(p.parse_args(["--port", "0"])).port == 0
    with pytest.raises(SystemExit):
        p.parse_args(["--k", "two"])
    assert "argument --k: invalid int value: 'two'" in capsys.readouterr().err
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"k": 0}))
    with pytest.raises(ValueError, match=r"setting 'k' \(--k\) must be at least 1, got 0"):
        command.read_settings(settings)
    settings.write_text(json.dumps({"port": 70000}))
    with pytest.raises(ValueError, match=r"setting 'port' \(--port\) must be at most 65535, got 70000"):
        command.read_settings(settings)
    settings.write_text(json.dumps({"limit": None, "skip": 2}))
    assert command.config(p.parse_args(["--settings", str(settings)])) == Counts(skip=2)


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


@dataclass
class Asked:
    question: str = field(metadata={"positional": True, "help": "what is asked"})
    tags: list[str] = field(default_factory=list, metadata={"append": True, "flag": "--tag", "metavar": "T",
                                                            "help": "a tag; repeatable"})
    init: str | None = field(default=None, metadata={"help": "start from this"})
    size: str | None = field(default=None, metadata={"choices": ("tiny", "small"), "aliases": ("--config",),
                                                     "help": "or from random weights"})
    write_config: str | None = None


ASKED = ConfigCommand(Asked, settings=True, exclude=("write_config",), exclusive=[("init", "size")],
                      extra=(Option(name="write_config", flag="--write-config", kind=bool, default=False,
                                    help="store it"),))


def test_positional_repeated_extra_and_exclusive_options(tmp_path, capsys):
    p = _parser(ASKED)
    help_ = p.format_help()
    assert "usage: toy [-h] [--settings FILE.json] [--tag T] [--init INIT | --size {tiny,small}]" in help_
    assert "  question              what is asked" in help_ and "--write-config        store it" in help_
    args = p.parse_args(["why?", "--tag", "a", "--tag", "b", "--config", "tiny", "--write-config"])
    assert args.write_config is True           # the command's own option, in args
    assert ASKED.config(args, write_config="p.json") == Asked("why?", ["a", "b"], None, "tiny", "p.json")
    assert ASKED.config(p.parse_args(["x"])) == Asked("x")   # a repeated option's default is not shared
    for argv in (["x", "--init", "m", "--size", "tiny"], ["x", "--init", "m", "--config", "tiny"]):
        with pytest.raises(SystemExit):
            p.parse_args(argv)
        assert "not allowed with argument --init" in capsys.readouterr().err
    settings = tmp_path / "asked.json"
    settings.write_text(json.dumps({"tags": ["c"], "size": "small", "write_config": True}))
    args = p.parse_args(["y", "--settings", str(settings)])
    assert ASKED.config(args) == Asked("y", ["c"], size="small") and args.write_config is True


def test_the_settings_option_is_read_only_when_spelled_out(tmp_path, capsys):
    from xqa.commands import train_reader

    parse = build_parser(("train", "reader")).parse_args
    # --set is an option of its own, not an abbreviation of --settings
    cfg = train_reader.config(parse(["--out", "o", "--size", "tiny", "--set", "d_model=64", "--set", "num_heads=2"]))
    assert cfg.arch == ["d_model=64", "num_heads=2"]
    with pytest.raises(SystemExit):
        parse(["--out", "o", "--sett", str(tmp_path / "x.json")])
    assert "--settings: write the option in full" in capsys.readouterr().err


def test_train_reader_gives_the_same_config_from_flags_as_from_a_settings_file(tmp_path):
    from xqa.commands import train_reader
    from xqa.training.fid import FidTrainConfig
    from xqa.training.span import SpanTrainConfig

    parse = build_parser(("train", "reader")).parse_args
    flags = ["--arch", "span", "--out", "o", "--init", "enc", "--passages", "p.jsonl", "--train", "t.jsonl",
             "--negatives", "3", "--train-embeddings", "--no-bf16", "--mix", "0.5", "--eval-mode", "simple",
             "--lr", "0.001"]
    settings = tmp_path / "span.json"
    settings.write_text(json.dumps({"family": "span", "out": "o", "init": "enc", "passages": "p.jsonl",
                                    "train": "t.jsonl", "negatives": 3, "train_embeddings": True, "bf16": False,
                                    "mix": 0.5, "eval_mode": "simple", "lr": 0.001}))
    from_flags = train_reader.config(parse(flags))
    from_file = train_reader.config(parse(["--settings", str(settings)]))
    assert from_flags == from_file == SpanTrainConfig(
        out="o", init="enc", passages="p.jsonl", train="t.jsonl", negatives=3, train_embeddings=True, bf16=False,
        mix=0.5, eval_mode="simple", lr=0.001)
    # the FiD family (the default): its own fields, the span reader's left out; the file's size by its new name
    settings.write_text(json.dumps({"out": "o", "size": "small", "tokenizer": "tok", "arch": ["num_layers=3"],
                                    "generator_share": 0.2}))
    from_file = train_reader.config(parse(["--settings", str(settings), "--n-context", "4"]))
    assert from_file == train_reader.config(parse(["--out", "o", "--config", "small", "--tokenizer", "tok", "--set",
                                                   "num_layers=3", "--pointer-mix", "0.2", "--n-context", "4"]))
    assert from_file == FidTrainConfig(out="o", size="small", tokenizer="tok", arch=["num_layers=3"],
                                       generator_share=0.2, n_context=4)


def test_build_gives_the_same_config_from_flags_as_from_a_settings_file(tmp_path, capsys):
    from xqa.recipes.corpus import BuildConfig
    from xqa.commands import build

    parse = build_parser(("build",)).parse_args
    flags = ["--passages", "p.tsv", "--out", "b", "--lang", "fi", "--method", "spar", "--k", "10", "--pieces",
             "--dhr-slices", "4", "--precision", "fp32"]
    settings = tmp_path / "build.json"
    settings.write_text(json.dumps({"passages": "p.tsv", "out": "b", "lang": "fi", "method": "spar", "k": 10,
                                    "pieces": True, "dhr_slices": 4, "precision": "fp32"}))
    assert build.COMMAND.config(parse(flags)) == build.COMMAND.config(parse(["--settings", str(settings)])) \
        == BuildConfig(passages="p.tsv", out="b", lang="fi", method="spar", k=10, pieces=True, dhr_slices=4,
                       precision="fp32")
    settings.write_text(json.dumps({"passages": "p.tsv", "out": "b", "precision": "int4"}))
    with pytest.raises(SystemExit):
        main(["build", "--settings", str(settings)])
    assert f"{settings}: setting 'precision' (--precision) must be one of auto, int8, fp32, bf16, got 'int4'" \
        in capsys.readouterr().err


def test_pipeline_weights_are_finite_and_max_frac_a_share(capsys):
    """The fusion weights (--alpha, --mu, ...) and SCD's --max-frac are checked by the parser, not
    by the fusion after every index has loaded (a ValueError traceback)."""
    for argv, said in ((["--alpha", "nan"], "argument --alpha: must be a finite number, got nan"),
                       (["--mu=-inf"], "argument --mu: must be a finite number, got -inf"),
                       (["--max-frac", "1.5"], "argument --max-frac: must be at most 1.0, got 1.5"),
                       (["--max-frac", "-0.1"], "argument --max-frac: must be at least 0.0, got -0.1")):
        with pytest.raises(SystemExit) as usage:
            main(["ask", "Who?", *argv])
        assert usage.value.code == 2 and said in capsys.readouterr().err
    args = build_parser(("ask",)).parse_args(["Who?", "--alpha", "-0.5", "--max-frac", "1"])
    assert (args.alpha, args.max_frac) == (-0.5, 1.0)
