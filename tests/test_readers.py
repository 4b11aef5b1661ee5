"""Several readers in one pipeline, chosen per question: pipeline.json's ``readers``, the
Pipeline's ``reader=NAME``, ``xqa ask``/``answer --reader``, the batcher and ``xqa build --also-reader``.

The pipeline tests run the small test build (``tiny_pipeline``, whose reader is a tiny FiD)
with a second reader: the same FiD folder under another name, reading one passage with greedy
search, so what it answers shows that its own settings took effect.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xqa.cli import main
from xqa.config import PipelineConfig, ReaderConfig
from xqa.errors import XqaError
from xqa.records import Question

# the second reader's settings: one passage read, greedy search, one candidate
SHORT = {"n_passages": 1, "beams": 1, "n_best": 1, "span_beams": 0}


def _two_readers(tiny_pipeline: Path, folder: Path, **short) -> Path:
    """A copy of the small build's pipeline.json in ``folder`` (paths made absolute) with a second
    reader ``short``: the same FiD folder with :data:`SHORT`'s settings (and ``short``'s)."""
    from xqa.methods import index_kinds, index_value, set_index

    cfg = PipelineConfig.load(tiny_pipeline)
    for kind in index_kinds():
        if index_value(cfg.retrieval, kind):
            set_index(cfg.retrieval, kind, cfg.path(index_value(cfg.retrieval, kind)))
    cfg.passages = cfg.path(cfg.passages)
    cfg.reader.model, cfg.reader.labels = cfg.path(cfg.reader.model), cfg.path(cfg.reader.labels)
    cfg.readers = {"short": ReaderConfig(**{**json.loads(json.dumps(cfg.to_dict()["reader"])), **SHORT, **short})}
    path = folder / "pipeline.json"
    cfg.save(path)
    return path


@pytest.fixture(scope="module")
def two_readers(tiny_pipeline, tmp_path_factory) -> Path:
    return _two_readers(Path(tiny_pipeline), tmp_path_factory.mktemp("readers"))


@pytest.fixture(scope="module")
def pipe(two_readers):
    from xqa.pipeline import Pipeline

    return Pipeline.load(two_readers)


def _questions(pipe, n: int) -> list[Question]:
    from xqa.io import read_questions

    qs = [q for q in read_questions(Path(pipe.config.reader.model).parents[1] / "world" / "test.jsonl")]
    return qs[:n]


# ------------------------------------------------------------------ pipeline.json

def test_readers_round_trip_and_the_default_reader_is_named_by_its_family(tmp_path):
    cfg = PipelineConfig(passages="p.jsonl", reader=ReaderConfig(model="m", n_passages=3),
                         readers={"fid": ReaderConfig(model="f", n_passages=20, beams=2, answerability_threshold=0.7),
                                  "span-2": ReaderConfig(model="s", n_passages=5)})
    cfg.reader.name = "span"
    cfg.save(tmp_path / "pipeline.json")
    back = PipelineConfig.load(tmp_path / "pipeline.json")
    assert back.to_dict() == cfg.to_dict()
    assert back.reader_names() == ["span", "fid", "span-2"]
    assert back.reader_config("fid").beams == 2 and back.reader_config("fid").answerability_threshold == 0.7
    assert back.reader_config("span") is back.reader and back.reader_config(None) is back.reader
    with pytest.raises(XqaError, match="unknown reader 'nope'; this pipeline's readers: span, fid, span-2"):
        back.reader_config("nope")
    # without reader.name: the family's name, read from the model folder's config.json
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"kind": "span_reader"}))
    cfg.reader.name = None
    cfg.save(tmp_path / "pipeline.json")
    assert PipelineConfig.load(tmp_path / "pipeline.json").reader_names() == ["span", "fid", "span-2"]
    assert PipelineConfig().reader_names() == ["default"]   # no reader at all


@pytest.mark.parametrize("readers, message", [
    ({"span": {"model": "x"}}, "field 'readers': 'span' is the name of the default reader"),
    ({"a b": {"model": "x"}}, "field 'readers': 'a b' is not a reader name"),
    ({"fid": {}}, "field 'readers.fid.model': the reader 'fid' names no model"),
    ({"fid": 3}, "field 'readers.fid' should be an object, found a number"),
    ([], "field 'readers' should be an object, found a list"),
    ({"fid": {"model": "x", "name": "other"}}, "field 'readers.fid.name': 'other' differs from its key 'fid'"),
    ({"fid": {"model": "x", "n_passages": "many"}}, "field 'readers.fid.n_passages' should be an integer"),
    ({"fid": {"model": "x", "answerability_threshold": 2}},
     r"field 'readers.fid.answerability_threshold' should be a probability in \[0, 1\]"),
    ({"fid": {"model": "x", "answerability": {"coef": 1}}}, "field 'readers.fid.answerability'"),
    ({"fid": {"model": "x", "beems": 2}}, r"unknown keys in pipeline config 'readers.fid': \['beems'\]"),
])
def test_a_bad_readers_entry_is_an_error_naming_its_field(tmp_path, readers, message):
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps({"reader": {"name": "span", "model": "m"}, "readers": readers}))
    with pytest.raises(XqaError, match=message):
        PipelineConfig.load(path)


def test_the_default_readers_name_is_checked_too(tmp_path):
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps({"reader": {"name": "my reader", "model": "m"}}))
    with pytest.raises(XqaError, match="field 'reader.name': 'my reader' is not a reader name"):
        PipelineConfig.load(path)


# ------------------------------------------------------------------ the pipeline and the CLI

def test_each_reader_answers_with_its_own_settings(pipe):
    assert pipe.readers == ["fid", "short"]
    [q] = _questions(pipe, 1)
    default = pipe.answer([q])[0]
    short = pipe.answer([q], reader="short")[0]
    assert len(default.evidence) == pipe.config.reader.n_passages == 4
    assert len(short.evidence) == 1 and len(short.candidates) == 1   # one passage read, one candidate kept
    assert len(default.candidates) > 1
    assert pipe.answer([q], reader="fid")[0].text == default.text   # the default reader by its name
    # both names read with the one model loaded from their shared folder
    assert pipe.reader_of("short") is pipe.reader and len(pipe._readers) == 1
    asked = pipe.ask(q.question, q.lang, reader="short")
    assert len(asked.answer.evidence) == 1 and asked.answer.text == short.text


def test_a_readers_calibrator_and_thresholds_are_its_own(pipe, tmp_path, tiny_pipeline):
    """The second reader's calibrator judges its answers; the default reader has none."""
    from xqa.pipeline import Pipeline

    calibrator = {"features": ["log_p"], "mean": [0.0], "scale": [1.0], "coef": [0.0], "intercept": 10.0}
    path = _two_readers(Path(tiny_pipeline), tmp_path, answerability=calibrator, answerability_threshold=0.9)
    two = Pipeline.load(path)
    [q] = _questions(two, 1)
    plain, judged = two.answer([q])[0], two.answer([q], reader="short")[0]
    assert plain.confidence is None and two.calibrator is None
    assert judged.confidence == pytest.approx(1 / (1 + 2.718281828459045 ** -10), rel=1e-6) and judged.answered


def test_check_names_an_unknown_reader_before_loading_anything(pipe):
    from xqa.pipeline import Pipeline

    fresh = Pipeline(pipe.config)
    with pytest.raises(XqaError, match="unknown reader 'nope'; this pipeline's readers: fid, short"):
        fresh.check(reader="nope")
    fresh.check(reader="short")
    assert fresh._readers == {} and fresh._components == {}


def test_ask_reader_picks_it_and_an_unknown_name_lists_the_names(two_readers, capsys):
    q = "What continent is Mexico in?"
    assert main(["ask", q, "--config", str(two_readers), "--reader", "short", "--json", "--lang", "en"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert len(short["evidence"]) == 1 and len(short["candidates"]) == 1
    assert main(["ask", q, "--config", str(two_readers), "--json", "--lang", "en"]) == 0
    assert len(json.loads(capsys.readouterr().out)["evidence"]) == 4
    assert main(["ask", q, "--config", str(two_readers), "--reader", "nope"]) == 1
    err = capsys.readouterr().err
    assert "unknown reader 'nope'; this pipeline's readers: fid, short" in err


def test_answer_reader_records_it_and_resumes_only_with_it(two_readers, tmp_path, capsys, pipe):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": q.id, "question": q.question, "lang": q.lang,
                                             "answers": list(q.answers)}) + "\n" for q in _questions(pipe, 2)))
    out = tmp_path / "run"
    args = ["answer", "--questions", str(questions), "--config", str(two_readers), "--out", str(out)]
    assert main([*args, "--reader", "nope"]) == 1
    assert "unknown reader 'nope'" in capsys.readouterr().err and not (out / "records.jsonl").exists()
    assert main([*args, "--reader", "short"]) == 0
    records = [json.loads(line) for line in open(out / "records.jsonl", encoding="utf-8")]
    assert [r["reader"] for r in records] == ["short", "short"]
    assert all(len(r["evidence"]) == 1 and len(r["candidates"]) == 1 for r in records)
    (out / "records.jsonl").write_text(json.dumps(records[0]) + "\n")   # as if killed after one question
    assert main(args) == 1
    assert "resume it with --reader short" in capsys.readouterr().err


# ------------------------------------------------------------------ a reader's folder as --reader

CALIBRATOR = {"features": ["log_p"], "mean": [0.0], "scale": [1.0], "coef": [0.0], "intercept": 10.0}


@pytest.fixture(scope="module")
def calibrated(tiny_pipeline, tmp_path_factory) -> Path:
    """The small build's pipeline.json (paths absolute) whose default reader has a calibrator."""
    path = _two_readers(Path(tiny_pipeline), tmp_path_factory.mktemp("calibrated"))
    cfg = PipelineConfig.load(path)
    cfg.readers, cfg.reader.answerability = {}, CALIBRATOR
    cfg.save(path)
    return path


def test_ask_reads_with_a_readers_folder_under_the_configs_settings_without_its_calibrator(calibrated, capsys):
    run = Path(PipelineConfig.load(calibrated).reader.model).parent   # a training run's folder (its best/)
    q = ["ask", "What continent is Mexico in?", "--config", str(calibrated), "--json", "--lang", "en"]
    assert main(q) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*q, "--reader", str(run)]) == 0
    captured = capsys.readouterr()
    folder = json.loads(captured.out)
    assert plain["confidence"] is not None and folder["confidence"] is None
    assert f"reader {run}: read with the config's reader settings; its answers carry no P(right)" in captured.err
    assert len(folder["evidence"]) == len(plain["evidence"]) == 4   # the config's passages read
    assert folder["answer"] == plain["answer"]   # the same model as the config's reader
    assert folder["reader"] == str(run) and "reader" not in plain   # named as xqa answer's records name it


def test_a_readers_folder_with_a_fusion_json_reads_with_the_settings_tuned_for_it(calibrated, tmp_path, capsys):
    """``xqa tune fusion --out FOLDER/fusion.json``: --reader FOLDER reads as it was tuned to, as a
    build that takes the folder does."""
    from xqa.recipes.corpus import FUSION_FILE

    tuned = tmp_path / "tuned-fid"
    shutil.copytree(Path(PipelineConfig.load(calibrated).reader.model), tuned)
    (tuned / FUSION_FILE).write_text(json.dumps({"beta": 0.4, "gamma": 0.7, "n_context": 2, "beams": 1,
                                                 "n_best": 1, "span_beams": 0, "tuned": ["beta", "gamma"]}))
    assert main(["ask", "What continent is Mexico in?", "--config", str(calibrated), "--json", "--lang", "en",
                 "--reader", str(tuned)]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert len(record["evidence"]) == 2 and len(record["candidates"]) == 1 and record["confidence"] is None
    assert f"read with the settings of its {tuned / FUSION_FILE}; its answers carry no P(right)" in captured.err


@pytest.mark.slow
def test_a_packed_reader_as_reader_is_unpacked_onto_the_pipelines_encoder_once(converted_e5, tmp_path, monkeypatch):
    """--reader PACKED (xqa reader pack's folder, the shipped one included) is unpacked onto the
    encoder the pipeline's dense index was made with, as xqa build does, into a folder reused
    until the packed files change."""
    from xqa.cli_options import pipeline_encoder, reader_choice
    from xqa.data.corpus import SHIPPED_READER
    from xqa.pipeline import reader_family

    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the unpacked folder goes under tmp_path
    index = tmp_path / "dense"
    index.mkdir()
    (index / "config.json").write_text(json.dumps({"kind": "dense_index", "model": {
        "path": "../nowhere", "abs_path": str(converted_e5)}}))
    cfg = PipelineConfig()
    cfg.retrieval.dense_index = str(index)
    assert pipeline_encoder(cfg) == converted_e5
    name = reader_choice(cfg, str(SHIPPED_READER))
    first = Path(cfg.readers[name].model)
    assert first.parent.name.startswith("xqa-readers-") and reader_family(str(first)).name == "span"
    again = PipelineConfig(retrieval=cfg.retrieval)
    stamp = (first / "config.json").stat().st_mtime_ns
    assert Path(again.readers[reader_choice(again, str(SHIPPED_READER))].model) == first   # reused, not made again
    assert (first / "config.json").stat().st_mtime_ns == stamp
    with pytest.raises(XqaError, match="a packed reader, and this pipeline has no converted encoder"):
        reader_choice(PipelineConfig(), str(SHIPPED_READER))
    # a dense index encoded by a trained retriever (no converted encoder): the build's encoder/ is the base
    retriever = tmp_path / "retriever"
    retriever.mkdir()
    (retriever / "config.json").write_text(json.dumps({"kind": "bi_encoder"}))
    tuned = tmp_path / "dense-ft"
    tuned.mkdir()
    (tuned / "config.json").write_text(json.dumps({"kind": "dense_index", "model": {
        "path": "../nowhere", "abs_path": str(retriever)}}))
    built = tmp_path / "build"
    built.mkdir()
    (built / "encoder").symlink_to(converted_e5, target_is_directory=True)
    other = PipelineConfig(base_dir=str(built))
    other.retrieval.dense_index = str(tuned)
    assert pipeline_encoder(other) == built / "encoder"
    assert Path(other.readers[reader_choice(other, str(SHIPPED_READER))].model) == first
    other = PipelineConfig()
    other.retrieval.dense_index = str(tuned)
    assert pipeline_encoder(other) is None
    # packed again (here: its files touched), it is made again and the folder of its earlier files goes
    import os
    import shutil

    copy = Path(shutil.copytree(SHIPPED_READER, tmp_path / "packed"))
    said = []
    made = Path(again.readers[reader_choice(again, str(copy), say=said.append)].model)
    os.utime(copy / "config.json", ns=(1, 1))
    newer = Path(again.readers[reader_choice(again, f"again={copy}", say=said.append)].model)
    assert newer != made and (newer / "config.json").is_file() and not made.exists()
    assert first.exists()                                   # another packed folder's reader stays
    assert f"removed {made}: made from {copy.resolve()} as it was before" in said


def test_reader_folders_that_are_not_readers_are_said_before_anything_loads(calibrated, tiny_pipeline, tmp_path,
                                                                              capsys):
    from xqa.cli_options import reader_choice

    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    cfg = PipelineConfig.load(calibrated)
    for value, said in ((Path(tiny_pipeline).parent / "world", "not a reader: its config.json kind 'world'"),
                        (tmp_path / "empty", "empty: not a reader folder"),
                        (tmp_path / "file.txt", "is a file; give a reader's folder or the name of one"),
                        (tmp_path / "none", "no such reader folder")):
        with pytest.raises(XqaError, match=said):
            reader_choice(cfg, str(value))
    assert cfg.readers == {}
    assert reader_choice(cfg, "fid") == "fid" and reader_choice(cfg, "nope") == "nope" and cfg.readers == {}
    assert main(["ask", "Who?", "--config", str(calibrated), "--reader", str(tmp_path / "empty")]) == 1
    assert "not a reader folder" in capsys.readouterr().err


def test_answer_records_a_readers_folder_by_its_path_and_resumes_with_it(calibrated, pipe, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": q.id, "question": q.question, "lang": q.lang,
                                             "answers": list(q.answers)}) + "\n" for q in _questions(pipe, 2)))
    run = Path(PipelineConfig.load(calibrated).reader.model).parent
    out = tmp_path / "run"
    args = ["answer", "--questions", str(questions), "--config", str(calibrated), "--out", str(out)]
    assert main([*args, "--reader", f"{run}/"]) == 0
    records = [json.loads(line) for line in open(out / "records.jsonl", encoding="utf-8")]
    assert [r["reader"] for r in records] == [str(run)] * 2 and all(r["confidence"] is None for r in records)
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["pipeline"]["readers"][str(run)]["model"] == str(run.resolve())
    (out / "records.jsonl").write_text(json.dumps(records[0]) + "\n")   # as if killed after one question
    capsys.readouterr()
    assert main([*args, "--reader", str(run)]) == 0
    assert "resuming: 1 of 2" in capsys.readouterr().out
    assert main(args) == 1
    assert f"resume it with --reader {run}" in capsys.readouterr().err
    # the reader trained again in its folder (here: a copy of the run, whose best/ config.json is
    # then written anew): a resumed run would mix two readers' answers, so it stops
    import os

    stamp = settings["answer"]["reader_files"]
    again = tmp_path / "again"
    shutil.copytree(run, again)
    (out / "records.jsonl").write_text(json.dumps({**records[0], "reader": str(again)}) + "\n")
    settings["pipeline"]["readers"] = {str(again): {**settings["pipeline"]["readers"][str(run)],
                                                    "model": str(again.resolve())}}
    settings["answer"]["reader"] = str(again)
    (out / "run.json").write_text(json.dumps({"settings": settings}))
    assert main([*args, "--reader", str(again)]) == 0   # the copy is the same files: it resumes
    assert "resuming: 1 of 2" in capsys.readouterr().out
    (out / "records.jsonl").write_text(json.dumps({**records[0], "reader": str(again)}) + "\n")
    os.utime(again / "best" / "config.json", ns=(1, 1))
    assert main([*args, "--reader", str(again)]) == 1
    err = capsys.readouterr().err
    assert f'{out} holds answers made with other settings (answer.reader_files "{stamp}" → "' in err


def test_demo_also_reader_offers_the_folder_beside_the_configs_readers(calibrated, tmp_path, monkeypatch, capsys):
    import apps.demo

    offered = []

    def build_app(pipeline, **_):
        offered.append((list(pipeline.readers), pipeline.config.readers))
        raise XqaError("not served in a test")

    monkeypatch.setattr(apps.demo, "build_app", build_app)
    run = Path(PipelineConfig.load(calibrated).reader.model).parent
    assert main(["demo", "--config", str(calibrated), "--also-reader", str(run)]) == 1
    [(names, readers)] = offered
    assert names == ["fid", str(run)] and readers[str(run)].answerability is None
    assert "no P(right)" in capsys.readouterr().err
    assert main(["demo", "--config", str(calibrated), "--also-reader", f"mine={run}", "--also-reader", str(run)]) == 1
    assert offered[-1][0] == ["fid", "mine", str(run)]   # NAME=FOLDER, as xqa build --also-reader takes it
    assert main(["demo", "--config", str(calibrated), "--also-reader", "nope"]) == 1
    assert "--also-reader nope: no such reader folder" in capsys.readouterr().err
    assert main(["demo", "--config", str(calibrated), "--also-reader", f"fid={run}"]) == 1
    assert "--also-reader fid=" in capsys.readouterr().err and len(offered) == 2


# ------------------------------------------------------------------ the batcher

def test_the_batcher_answers_each_reader_apart():
    from xqa.batching import Batcher

    class Recording:
        def __init__(self):
            self.calls = []

        def question_languages(self, text, lang="auto"):
            return "en", ""

        def answer(self, questions, method=None, k=None, n_passages=None, reader=None):
            self.calls.append(([q.id for q in questions], reader))
            return [f"{q.id}:{reader}" for q in questions]

    pipe = Recording()
    batcher = Batcher(pipe, max_batch=8, max_wait=0.5)
    futures = [batcher.submit(Question(id=i, question="x", lang="en"), "dense", 5, 2, reader=r)
               for i, r in (("a", None), ("b", "fid"), ("c", None), ("d", "fid"), ("e", "span"))]
    assert [f.result(10) for f in futures] == ["a:None", "b:fid", "c:None", "d:fid", "e:span"]
    assert sorted(pipe.calls, key=str) == sorted([(["a", "c"], None), (["b", "d"], "fid"), (["e"], "span")], key=str)
    assert batcher.ask("who?", reader="fid").answer == "q:fid"
    batcher.close()


def test_batched_answers_of_two_readers_are_their_own(pipe):
    from xqa.batching import Batcher

    qs = _questions(pipe, 2)
    batcher = Batcher(pipe, max_batch=8, max_wait=1.0)
    futures = [batcher.submit(q, reader=r) for q in qs for r in (None, "short")]
    answers = [f.result(300) for f in futures]
    batcher.close()
    assert [len(a.evidence) for a in answers] == [4, 1, 4, 1]
    for a, q in zip(answers[1::2], qs):
        assert a.text == pipe.answer([q], reader="short")[0].text


# ------------------------------------------------------------------ xqa build --also-reader

def _build_with_a_reader(tmp_path: Path, fid: Path, readers: dict):
    """A corpus build in ``tmp_path/out`` whose reader stage is done (``fid`` copied) and whose
    passages are recorded, with ``readers`` as ``--also-reader``."""
    from xqa.recipes.corpus import CorpusBuild

    out = tmp_path / "out"
    shutil.copytree(fid, out / "reader")
    (out / "source.json").write_text(json.dumps({"languages": {"en": 3, "de": 1}}))
    return CorpusBuild(tmp_path / "passages.jsonl", out, reader=fid, readers=readers)


def test_build_also_reader_copies_it_and_writes_it_into_readers(tiny_pipeline, tmp_path):
    from xqa.recipes.corpus import BuildConfig, corpus_build

    fid = Path(tiny_pipeline).parent / "reader" / "best"
    build = _build_with_a_reader(tmp_path, fid, {"fid-2": fid})
    names = [s.name for s in build.stages()]
    assert names[names.index("reader") + 1] == "reader fid-2 (--also-reader)"
    assert names[names.index("pipeline config") + 1] == "the other readers in the pipeline config"
    stage = {s.name: s for s in build.stages()}
    assert not stage["reader fid-2 (--also-reader)"].done()
    stage["reader fid-2 (--also-reader)"].run()
    assert (build.out / "readers" / "fid-2" / "config.json").is_file()
    assert stage["reader fid-2 (--also-reader)"].done()   # a rerun skips it
    build.write_config()
    cfg = PipelineConfig.load(build.config_path)
    assert cfg.reader_names() == ["fid", "fid-2"] and cfg.readers["fid-2"].model == "readers/fid-2"
    assert cfg.readers["fid-2"].n_passages == cfg.reader.n_passages and cfg.readers["fid-2"].answerability is None
    assert stage["the other readers in the pipeline config"].done()

    # a build with the config written, asked for one more reader: only the readers are added
    cfg.reader.beta = 0.25   # as tuned
    cfg.save(build.config_path)
    more = _build_with_a_reader(tmp_path / "again", fid, {"fid-2": fid, "fid-3": fid})
    shutil.copytree(build.out / "readers", more.out / "readers")
    shutil.copy(build.config_path, more.config_path)
    stage = {s.name: s for s in more.stages()}
    assert stage["reader fid-2 (--also-reader)"].done() and not stage["reader fid-3 (--also-reader)"].done()
    assert not stage["the other readers in the pipeline config"].done()
    stage["reader fid-3 (--also-reader)"].run()
    stage["the other readers in the pipeline config"].run()
    again = PipelineConfig.load(more.config_path)
    assert again.reader_names() == ["fid", "fid-2", "fid-3"] and again.reader.beta == 0.25

    # the spelling of the flag
    passages = tmp_path / "passages.jsonl"
    passages.write_text("")
    built = corpus_build(BuildConfig(out=str(tmp_path / "b"), passages=str(passages),
                                     also_reader=[f"fid-2={fid}", f"x={fid}"]))
    assert built.other_readers == {"fid-2": fid.resolve(), "x": fid.resolve()}
    for bad, message in ((["fid-2"], "expected NAME=FOLDER"), ([f"a b={fid}"], "'a b' is not a reader name"),
                         ([f"x={fid}", f"x={fid}"], "the name 'x' is given twice"),
                         ([f"x={tmp_path / 'none'}"], "no such reader folder")):
        with pytest.raises(XqaError, match=message):
            corpus_build(BuildConfig(out=str(tmp_path / "b"), passages=str(passages), also_reader=bad))


def test_build_refuses_an_other_reader_named_like_the_builds_reader(tiny_pipeline, tmp_path):
    fid = Path(tiny_pipeline).parent / "reader" / "best"
    build = _build_with_a_reader(tmp_path, fid, {"fid": fid})
    stage = {s.name: s for s in build.stages()}
    with pytest.raises(XqaError, match="'fid' is the name of the build's reader"):
        stage["reader fid (--also-reader)"].run()
    assert not (build.out / "readers" / "fid").exists()


def test_a_build_rerun_with_another_reader_folder_places_that_one(tiny_pipeline, tmp_path, capsys):
    """The reader stages are done only for the reader they placed (build.json's ``placed``: its
    folder and a stamp of its files): a rerun that names another --reader or --also-reader places
    it, instead of keeping the first; the same files in another folder (a moved checkout) are the same."""
    from xqa.recipes.corpus import CorpusBuild, reader_stamp

    fid = Path(tiny_pipeline).parent / "reader" / "best"
    other, moved = tmp_path / "other", tmp_path / "moved"
    shutil.copytree(fid, other)
    shutil.copytree(fid, moved)
    (other / "marker.txt").write_text("the other reader")
    build = _build_with_a_reader(tmp_path, fid, {"x": fid})
    for name in ("reader", "reader x (--also-reader)"):
        stage = {s.name: s for s in build.stages()}[name]
        stage.run()
        assert stage.done()
    first = {"path": str(fid.resolve()), "stamp": reader_stamp(fid)}
    assert json.loads((build.out / "build.json").read_text())["placed"] == {"reader": first, "readers/x": first}
    assert reader_stamp(fid.parent) == reader_stamp(fid)   # a training run's folder: its best reader
    assert {s.name: s for s in CorpusBuild(build.source, build.out, reader=moved).stages()}["reader"].done()
    weights = next(f for f in sorted(moved.rglob("*.safetensors")))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1   # trained again in its folder: the same files, the same sizes, other weights
    weights.write_bytes(bytes(data))
    assert reader_stamp(moved) != reader_stamp(fid)
    build.write_config()
    (build.out / "tuned").mkdir()
    (build.out / "tuned" / "fusion.json").write_text("{}")   # tuned for the first reader
    again = CorpusBuild(build.source, build.out, reader=other, readers={"x": other})
    for name, placed in (("reader", build.out / "reader"), ("reader x (--also-reader)", build.out / "readers" / "x")):
        stage = {s.name: s for s in again.stages()}[name]
        assert not stage.done() and not (placed / "marker.txt").exists()
        stage.run()
        assert stage.done() and (placed / "marker.txt").read_text() == "the other reader"
    assert "placed from" in capsys.readouterr().out
    # the config's weights were chosen for the reader replaced: it is written, and tuned, again
    assert not (build.out / "tuned").exists() and not build.config_path.exists()
    build.write_config()   # the recipe's record keeps what was placed
    assert json.loads((build.out / "build.json").read_text())["placed"]["reader"]["path"] == str(other.resolve())


def test_a_build_given_a_folder_that_is_no_reader_stops_before_building(tiny_pipeline, tmp_path):
    from xqa.cli import main

    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": "1", "title": "t", "text": "x", "lang": "en"}) + "\n")
    world = Path(tiny_pipeline).parent / "world"
    for args in (["--reader", str(world)], ["--also-reader", f"x={world}"], ["--reader", str(passages)]):
        assert main(["build", "--passages", str(passages), "--out", str(tmp_path / "out"), *args]) == 1
        assert not (tmp_path / "out").exists()


def test_an_other_readers_fusion_json_sets_how_the_build_reads_it(tiny_pipeline, tmp_path):
    """``xqa tune fusion --out READER/fusion.json``: a build that takes that reader (``--also-reader``,
    or the shipped FiD) reads it with the passages, beams and weights it was tuned with."""
    from xqa.recipes.corpus import FUSION_FILE, tuned_reader_settings

    fid = tmp_path / "fid-tuned"
    shutil.copytree(Path(tiny_pipeline).parent / "reader" / "best", fid)
    (fid / FUSION_FILE).write_text(json.dumps({
        "beta": 0.4, "gamma": 0.7, "miss": 0.05, "dev_f1": 0.5, "n_context": 3, "beams": 2, "n_best": 3,
        "span_beams": 1, "reader": "fid", "tuned": ["beta", "gamma", "miss"]}))
    build = _build_with_a_reader(tmp_path, Path(tiny_pipeline).parent / "reader" / "best", {"fid-2": fid})
    place = {s.name: s for s in build.stages()}["reader fid-2 (--also-reader)"]
    place.run()
    placed = build.out / "readers" / "fid-2" / FUSION_FILE
    assert placed.is_file() and place.done()                               # it went along with the reader
    placed.unlink()                    # a place cut short after the reader, before its fusion.json
    assert not place.done()
    place.run()
    assert placed.read_bytes() == (fid / FUSION_FILE).read_bytes() and place.done()
    build.write_config()
    cfg = PipelineConfig.load(build.config_path)
    got = cfg.readers["fid-2"]
    assert (got.n_passages, got.beams, got.n_best, got.span_beams) == (3, 2, 3, 1)
    assert (got.beta, got.gamma, got.miss) == (0.4, 0.7, 0.05)
    assert cfg.reader.beta != 0.4 or cfg.reader.n_passages != 3            # the default reader keeps the recipe's
    # the reader re-tuned: a rebuild places it again and reads it with the new settings
    tuned = json.loads((fid / FUSION_FILE).read_text())
    (fid / FUSION_FILE).write_text(json.dumps({**tuned, "n_context": 5}))
    stages = {s.name: s for s in build.stages()}
    assert stages["the other readers in the pipeline config"].done()
    assert not place.done()
    place.run()
    assert not stages["the other readers in the pipeline config"].done()
    stages["the other readers in the pipeline config"].run()
    assert stages["the other readers in the pipeline config"].done()
    assert PipelineConfig.load(build.config_path).readers["fid-2"].n_passages == 5
    # a broken file is named with its line
    (fid / FUSION_FILE).write_text('{"beta": 0.4,\n "tuned": [}\n')
    with pytest.raises(XqaError, match=r"fusion.json:2: not JSON"):
        tuned_reader_settings(fid)
    assert tuned_reader_settings(tmp_path) == {}


def test_a_reader_folder_placed_in_a_build_links_its_weights_and_copies_its_records(tmp_path):
    """`xqa build --reader FOLDER` (and --also-reader): the weights are hard links (xqa never
    writes into them), the JSON records copies, so editing the build's leaves the source as it was."""
    from xqa.recipes.corpus import place_reader

    src = tmp_path / "mine"
    (src / "encoder").mkdir(parents=True)
    (src / "config.json").write_text(json.dumps({"kind": "span_reader"}))
    (src / "encoder" / "model.safetensors").write_bytes(b"w" * (16 << 20))
    (src / "heads.safetensors").write_bytes(b"small")
    dest = tmp_path / "build" / "reader"
    place_reader(src, tmp_path / "build" / "encoder", dest)
    assert (dest / "encoder" / "model.safetensors").stat().st_ino == (src / "encoder" / "model.safetensors").stat().st_ino
    assert (dest / "config.json").stat().st_ino != (src / "config.json").stat().st_ino
    assert (dest / "heads.safetensors").read_bytes() == b"small"
    assert (dest / "heads.safetensors").stat().st_ino != (src / "heads.safetensors").stat().st_ino


@pytest.mark.slow
def test_report_gold_reads_a_packed_reader_put_onto_the_base_it_is_given(converted_e5, tmp_path, monkeypatch, capsys):
    """xqa report gold --model PACKED --base ENCODER scores the packed reader as its unpacked
    form; without --base (or with --base for a whole reader) it says what to give."""
    import tempfile

    from xqa.data.corpus import SHIPPED_READER

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    own = tmp_path / "own.jsonl"
    rows = [{"id": "capital", "question": "Was ist die Hauptstadt Deutschlands?", "answers": ["Berlin"],
             "context": "Berlin ist die Hauptstadt Deutschlands. Die Stadt hat etwa 3,7 Millionen Einwohner."},
            {"id": "people", "question": "Wie viele Einwohner hat Berlin?", "answers": ["etwa 3,7 Millionen"],
             "context": "Berlin ist die Hauptstadt Deutschlands. Die Stadt hat etwa 3,7 Millionen Einwohner."}]
    own.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    args = ["report", "gold", "--model", str(SHIPPED_READER), "--file", f"{own}:de", "--json", str(tmp_path / "g.json")]
    assert main(args) == 1
    assert "a packed reader, which holds what training changed; give the encoder it was trained from: --base" \
        in capsys.readouterr().err
    assert main(args + ["--base", str(tmp_path / "none")]) == 1
    assert "--base " in capsys.readouterr().err and not (tmp_path / "g.json").exists()
    assert main(args + ["--base", str(converted_e5)]) == 0
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["summary"]["questions"] == 2 and report["table"][0]["n"] == 2
    assert report["predictions"]["own.jsonl"]["capital"] == "Berlin" and report["table"][0]["em"] >= 0.5
    made = [p for p in tmp_path.glob("xqa-readers-*/*")]
    assert len(made) == 1 and made[0].name.startswith("span-reader-")
    assert main(["report", "gold", "--model", str(made[0]), "--base", str(converted_e5), "--file", f"{own}:de"]) == 1
    assert "is a whole reader; --base is for a packed reader or a kit run" in capsys.readouterr().err
    # xqa bench reader takes it the same way, and times the reader it makes
    bench = ["bench", "reader", "--reader", str(SHIPPED_READER), "--passages", "1", "--questions", "1",
             "--precisions", "fp32", "--json", str(tmp_path / "bench.json")]
    assert main(bench) == 1
    assert "--reader " + str(SHIPPED_READER) + ": a packed reader" in capsys.readouterr().err
    assert main([*bench, "--base", str(converted_e5)]) == 0
    timed = json.loads((tmp_path / "bench.json").read_text())
    assert timed["family"] == "span" and timed["rows"][0]["passages"] == 1
    assert [p for p in tmp_path.glob("xqa-readers-*/*")] == made                 # the same folder, reused
    assert main(["tune", "fusion", "--model", str(SHIPPED_READER), "--dev", str(own), "--out", str(tmp_path / "f")]) == 1
    assert f"--model {SHIPPED_READER}: a packed reader" in capsys.readouterr().err
