"""End to end on a real tiny embedded default: search, ask, answer (resumable), eval."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from types import SimpleNamespace

from xqa.cli import main
from xqa.cli_options import pipeline_config
from xqa.config import PipelineConfig, method_for
from xqa.errors import XqaError
from xqa.io import read_passages, read_questions, read_results
from xqa.pipeline import Pipeline, question_text
from xqa.records import Question

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipe(tiny_pipeline) -> Pipeline:
    return Pipeline.load(tiny_pipeline)


@pytest.fixture(scope="module")
def test_questions(tiny_pipeline):
    return read_questions(Path(tiny_pipeline).parent / "world" / "test.jsonl")


def test_config_names_every_method_and_tuned_weights(pipe, tiny_pipeline):
    assert set(pipe.methods) == {"sparse", "dense", "scd", "hybrid", "rrf", "spar", "spar+scd",
                                 "roman", "sparse+roman"}
    tuned = json.loads(Path(tiny_pipeline).read_text())["tuned"]
    assert {"alpha", "mu", "roman_weight"} <= set(tuned)
    cfg = PipelineConfig.load(tiny_pipeline)
    assert cfg.examples and any(e["crosslingual"] for e in cfg.examples)
    # evidence fusion is tuned reading as many passages as the pipeline reads (not the training setting)
    assert tuned["fusion"]["n_context"] == cfg.reader.n_passages
    # ... and with the span-constrained candidates the pipeline's reader adds
    assert cfg.reader.span_beams > 0 and tuned["fusion"]["span_beams"] == cfg.reader.span_beams
    # ... and with the world's answer labels, which the pipeline answers with
    assert cfg.reader.labels == "world/labels.jsonl" and tuned["fusion"]["labels"].endswith("world/labels.jsonl")


def test_a_span_copied_from_another_language_is_answered_in_the_questions(pipe, test_questions):
    from types import SimpleNamespace

    import numpy as np

    assert len(pipe.labels) > 100
    q = next(q for q in test_questions if q.lang == "en")
    row = next(json.loads(line) for line in open(pipe.config.path("world/labels.jsonl"), encoding="utf-8")
               if json.loads(line)["id"].startswith("city/"))
    ja, en = row["labels"]["ja"], row["labels"]["en"]
    ctxs = pipe.retrieve([q], k=2)[0][:2]
    out = SimpleNamespace(candidates=[(ja, -0.5), ("1999", -2.0)], relevance=np.array([0.5, 0.5][: len(ctxs)]))
    answer = pipe._answer(q, ctxs, out, fuse=True)
    assert answer.text == en and answer.candidates[0].written == ja
    assert pipe._answer(replace(q, lang="ja"), ctxs, out, fuse=True).text == ja   # asked in Japanese


@pytest.mark.parametrize("method", ["sparse", "dense", "scd", "hybrid", "rrf", "spar", "spar+scd",
                                    "roman", "sparse+roman"])
def test_every_method_retrieves_real_passages(pipe, test_questions, method):
    qs = test_questions[:12]
    ctxs = pipe.retrieve(qs, k=10, method=method, fallback="none")
    assert len(ctxs) == len(qs)
    # The BM25 methods may find no term in common with a question (a Chinese question is one
    # romanized token in the cross-script index); every other method always answers ...
    bm25_only = method in ("sparse", "roman", "sparse+roman")
    assert sum(bool(cs) for cs in ctxs) >= (len(qs) // 2 if bm25_only else len(qs))
    # ... and with the config's dense fallback, every method does
    assert all(pipe.retrieve(qs, k=10, method=method))
    for q, cs in zip(qs, ctxs):
        assert len(cs) <= 10
        assert len({c.id for c in cs}) == len(cs)
        scores = [c.score for c in cs]
        assert scores == sorted(scores, reverse=True)  # FiD's loader re-sorts by score
        if method == "sparse":
            assert all(c.lang == q.lang for c in cs)  # BM25 searches the question's language only
        for c in cs:
            assert c.text and c.source in {"dense", "sparse", "corroborated", "spar", "hybrid", "rrf",
                                           "roman", "sparse+roman"}
            assert c.lang  # from the passage, also where the retriever (cross-script) does not know it


def test_scd_keeps_its_sparse_budget(pipe, test_questions):
    k, max_frac = 10, 0.2
    for cs in pipe.retrieve(test_questions[:20], k=k, method="scd", max_frac=max_frac):
        assert sum(c.source == "sparse" for c in cs) <= int(max_frac * k)


def test_answer_returns_candidates_and_evidence(pipe, test_questions):
    answers = pipe.answer(test_questions[:6])
    for a, q in zip(answers, test_questions[:6]):
        assert a.question_id == q.id
        assert a.candidates and a.text == a.candidates[0].text
        assert 0.0 <= a.score <= 1.0 + 1e-6
        rel = [e.relevance for e in a.evidence]
        assert len(rel) == pipe.config.reader.n_passages and abs(sum(rel) - 1) < 1e-3


def test_ask_identifies_the_language_when_auto(pipe, test_questions):
    """``Pipeline.ask(text)`` searches a question in the language it identifies (every world language
    here) and answers as ``answer`` does for that language; an explicit code skips identification."""
    for q in test_questions:
        assert pipe.question_language(q.question) == q.lang, q.question
    q = next(q for q in test_questions if q.lang == "ja")
    asked = pipe.ask(q.question, question_id=q.id)
    assert asked.detected and asked.question == Question(id=q.id, question=q.question, lang="ja")
    [direct] = pipe.answer([asked.question])
    assert asked.answer.question_id == q.id and asked.answer.text == direct.text and asked.answer.evidence
    given = pipe.ask("  " + q.question, lang="und")
    assert not given.detected and given.question.lang == "und" and given.question.question == q.question
    assert asked.identified == given.identified == ""
    # a language the pipeline has no index for is searched as und, and said
    from xqa.rendering import answer_lines

    french = pipe.ask("Quelle est la capitale de l'Australie ?")
    assert french.question.lang == "und" and french.identified == "fr" and french.answer.evidence
    first = answer_lines(french.answer, french.question.question, "und", "hybrid", unknown_lang=True,
                         identified=french.identified)[0]
    assert first.startswith("question (und: reads as French (fr), which no BM25 index here covers; "
                            "BM25 searches the indexes of its script and dense retrieval all languages): Quelle")
    named = answer_lines(french.answer, french.question.question, "und", "hybrid", unknown_lang=True,
                         identified="fr", searched=["de", "en"])[0]
    assert "; BM25 searches the indexes of its script (de, en) and dense retrieval all languages): Quelle" in named
    bm25 = answer_lines(french.answer, french.question.question, "und", "sparse", unknown_lang=True,
                        identified="fr", searched=["de", "en"])[0]
    assert "; BM25 searches the indexes of its script (de, en)): Quelle" in bm25   # sparse has no dense part
    dense = answer_lines(french.answer, french.question.question, "und", "dense", unknown_lang=True,
                         identified="fr", searched=["de", "en"])[0]
    assert "covers; dense retrieval searches all languages (dense uses no BM25 index)): Quelle" in dense
    # given as French, which no index covers, it is searched as when its language is not known
    stated = pipe.ask(french.question.question, lang="fr")
    assert stated.question.lang == "fr" and not stated.detected
    as_fr, as_und = (pipe.retrieve([Question("q", french.question.question, lang)], method="sparse")[0]
                     for lang in ("fr", "und"))
    assert as_fr and [c.id for c in as_fr] == [c.id for c in as_und] and {c.source for c in as_fr} == {"sparse"}
    given = answer_lines(stated.answer, french.question.question, "fr", "hybrid", indexed=False,
                         searched=["de", "en"])[0]
    assert given.startswith("question (fr: no BM25 index here covers French; BM25 searches the indexes of its "
                            "script (de, en) and dense retrieval all languages): Quelle")
    none = answer_lines(french.answer, "Кто?", "und", "hybrid", unknown_lang=True, searched=[])[0]
    assert none == ("question (und: not identified; no BM25 index is written in its script, so dense retrieval "
                    "alone searches, in all languages): Кто?")
    with pytest.raises(XqaError, match="empty"):
        pipe.ask("   ")


def test_prepare_loads_everything_answering_reads(tiny_pipeline, test_questions):
    """After ``prepare`` (what ``xqa ask`` does while the question's language is identified
    elsewhere), answering loads nothing more: the method's parts, the passages and the reader
    are in."""
    said = []
    pipe = Pipeline(PipelineConfig.load(tiny_pipeline), say=said.append)
    pipe.prepare(method="scd")
    loaded = [line for line in said if line.startswith("loaded ")]
    assert any("dense index" in x for x in loaded) and any("sparse index" in x for x in loaded)
    assert any("passages" in x for x in loaded) and any(x.startswith("loaded reader") for x in loaded)
    before = len(said)
    q = test_questions[0]
    pipe.ask(q.question, q.lang, method="scd")
    assert len(said) == before, said[before:]


def _cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xqa.cli", *map(str, argv)], capture_output=True, text=True)


def test_search_cli_writes_dpr_layout(tiny_pipeline, tmp_path, test_questions):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:5]))
    assert main(["search", "--config", str(tiny_pipeline), "--questions", str(qfile), "--method", "scd",
                 "--k", "7", "--out", str(tmp_path / "r.json"), "--trec", str(tmp_path / "r.trec")]) == 0
    results = read_results(tmp_path / "r.json")
    assert [r.question.id for r in results] == [q.id for q in test_questions[:5]]
    assert all(len(r.ctxs) <= 7 for r in results)
    assert len((tmp_path / "r.trec").read_text().splitlines()) == sum(len(r.ctxs) for r in results)


def test_search_trec_refuses_a_passage_id_with_a_space_before_searching(tiny_pipeline, tmp_path, test_questions,
                                                                         capsys):
    cfg = PipelineConfig.load(tiny_pipeline)
    passages = tmp_path / "passages.jsonl"
    shutil.copy(cfg.path(cfg.passages), passages)
    with passages.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "doc 1", "title": "T", "text": "A passage no index holds.", "lang": "en"}) + "\n")
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(test_questions[0].to_dict(), ensure_ascii=False) + "\n")
    assert main(["search", "--config", str(tiny_pipeline), "--passages", str(passages), "--questions", str(qfile),
                 "--out", str(tmp_path / "r.jsonl"), "--trec", str(tmp_path / "r.trec")]) != 0
    err = capsys.readouterr().err
    assert "passage id 'doc 1' is empty or holds whitespace" in err and "search (" not in err   # no search begun
    assert not (tmp_path / "r.jsonl").exists()


def test_a_dpr_tsv_of_the_pipelines_one_language_needs_no_lang(tmp_path):
    """DPR's passage TSV carries no language: a pipeline whose indexes hold one language reads it
    in that one; one of several languages says to name a lang column (its --lang is the questions')."""
    tsv = tmp_path / "psgs.tsv"
    tsv.write_text("id\ttext\ttitle\n1\tParis is the capital of France.\tParis\n", encoding="utf-8")
    for name, langs in (("one", ["en"]), ("two", ["en", "de"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"kind": "bm25", "languages": {x: {} for x in langs}}))
    one = Pipeline(PipelineConfig(passages=str(tsv), retrieval=replace(PipelineConfig().retrieval,
                                                                      sparse_index=str(tmp_path / "one"))))
    assert one.store.get("1").lang == "en"
    two = Pipeline(PipelineConfig(passages=str(tsv), retrieval=replace(PipelineConfig().retrieval,
                                                                      sparse_index=str(tmp_path / "two"))))
    with pytest.raises(XqaError, match=r"psgs\.tsv: DPR TSV without a 'lang' column, for a pipeline of several "
                                       r"languages \(de, en\): name each passage's language in its header"):
        two.store
    tsv.write_text("id\ttext\ttitle\tlang\n1\tBerlin ist die Hauptstadt.\tBerlin\tde\n", encoding="utf-8")
    named = Pipeline(PipelineConfig(passages=str(tsv), retrieval=replace(PipelineConfig().retrieval,
                                                                        sparse_index=str(tmp_path / "two"))))
    assert named.store.get("1").lang == "de"


def test_an_index_over_part_of_the_passages_is_said(tmp_path):
    """A dense index built over a sample, given beside a pipeline's whole collection, finds none
    of the other passages: said when both are loaded, whichever comes first."""
    passages = tmp_path / "p.jsonl"
    passages.write_text("".join(json.dumps({"id": str(i), "text": f"text {i}", "lang": "en"}) + "\n"
                                for i in range(3)))
    (tmp_path / "dense").mkdir()
    (tmp_path / "dense" / "config.json").write_text(json.dumps({"kind": "dense_index", "passages": 2}))
    cfg = PipelineConfig(passages=str(passages), retrieval=replace(PipelineConfig().retrieval,
                                                                  dense_index=str(tmp_path / "dense")))
    pipe = Pipeline(cfg)
    pipe._components["dense"] = object()   # loaded before the passages (as xqa ask does)
    with pytest.warns(UserWarning, match=r"the dense index .*dense holds 2 passages of the 3 of .*p\.jsonl: it "
                                         r"finds none of the others"):
        pipe.store
    (tmp_path / "dense" / "config.json").write_text(json.dumps({"kind": "dense_index", "passages": 3}))
    import warnings

    whole = Pipeline(cfg)
    whole._components["dense"] = object()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole.store   # the whole collection: nothing said


def test_answer_resumes_without_duplicates_then_eval_scores_it(tiny_pipeline, tmp_path, test_questions, capsys):
    qs = test_questions[:24]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs))
    out = tmp_path / "run"
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out),
            "--batch-size", "8"]
    assert main(args) == 0
    records = (out / "records.jsonl").read_text().splitlines()
    # Simulate a kill: keep 9 records and a torn tenth line, then run again.
    (out / "records.jsonl").write_text("\n".join(records[:9]) + "\n" + records[9][:25])
    capsys.readouterr()
    assert main(args) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    again = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in again) == sorted(q.id for q in qs)
    first = {json.loads(line)["id"]: json.loads(line)["answer"] for line in records}
    assert {r["id"]: r["answer"] for r in again} == first  # deterministic, nothing lost or doubled
    preds = json.loads((out / "predictions.json").read_text())
    assert set(preds) == {q.id for q in qs}
    for lang in {q.lang for q in qs}:
        per_lang = json.loads((out / "predictions" / f"{lang}.json").read_text())
        assert set(per_lang) == {q.id for q in qs if q.lang == lang}

    report = tmp_path / "report"
    scores = tmp_path / "scores.json"
    assert main(["eval", "--gold", str(qfile), "--predictions", str(out / "predictions.json"),
                 "--json", str(scores), "--report", str(report)]) == 0
    data = json.loads(scores.read_text())
    assert data  # per-language figures written
    assert any(report.glob("*.md"))
    # xqa answer's own last line: the macro EM/F1 xqa eval computes, over every question of the run
    macro = data["end_to_end"]["macro"]
    assert said.startswith(f"official MIA EM {macro['em']:.2f} / F1 {macro['f1']:.2f} on the 24 question(s) "
                           f"with answers (macro over {len(data['end_to_end']['per_language'])} language"), said


def test_answer_refuses_to_resume_a_run_made_with_other_settings(tiny_pipeline, tmp_path, test_questions, capsys):
    """Records answered by one method (k, passages read, …) are not resumed by another: the
    predictions would mix the two. The same settings resume; other questions may join."""
    qs = test_questions[:4]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs[:2]))
    out = tmp_path / "run"
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out)]
    assert main(args) == 0
    assert json.loads((out / "run.json").read_text())["settings"]["pipeline"]["retrieval"]["method"]
    before = (out / "records.jsonl").read_text()
    capsys.readouterr()
    assert main(args + ["--method", "sparse", "--n-passages", "2"]) == 1
    err = capsys.readouterr().err
    assert f"{out} holds answers made with other settings (" in err
    assert "answer.n_passages" in err and 'pipeline.retrieval.method "' in err and '→ "sparse"' in err
    assert (out / "records.jsonl").read_text() == before                   # nothing written
    n = json.loads(Path(tiny_pipeline).read_text())["reader"]["n_passages"]
    assert main(args + ["--n-passages", str(n)]) == 0                      # the config's own value: the same
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs[1:]))
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(more), "--out", str(out)]) == 0
    assert "resuming: 1 of 3 questions already answered (records.jsonl also holds 1 answer to other questions)" \
        in capsys.readouterr().out
    # evidence passages kept per record shape the records: another number is not resumed
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(more), "--out", str(out),
                 "--evidence", "2"]) == 1
    assert "answer.evidence 5 → 2" in capsys.readouterr().err
    # a run.json written without an option recorded now (an older xqa's) resumes with its default
    run = json.loads((out / "run.json").read_text())
    del run["settings"]["answer"]["evidence"]
    (out / "run.json").write_text(json.dumps(run))
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(more), "--out", str(out)]) == 0


def test_answer_refuses_to_resume_when_a_question_changed_under_its_id(tiny_pipeline, tmp_path, test_questions,
                                                                         capsys):
    """Ids such as STEM:LINE name a line of a file: edited, the same id asks another question,
    whose old answer a resumed run would keep."""
    qfile = tmp_path / "mine.txt"
    qfile.write_text("Who founded QRpedia?\nWhat is the capital of Germany?\n")
    out = tmp_path / "run"
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--lang", "en", "--out", str(out)]
    assert main(args) == 0
    before = (out / "records.jsonl").read_text()
    qfile.write_text("Who founded QRpedia?\nWhere is the Brandenburg Gate?\n")
    capsys.readouterr()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert (f"records.jsonl:2: question 'mine:2' was answered as 'What is the capital of Germany?', and is now "
            f"'Where is the Brandenburg Gate?': the questions changed") in err
    assert (out / "records.jsonl").read_text() == before
    qfile.write_text("  Who founded QRpedia?\nWhat is the capital of Germany?\n")   # the same questions
    assert main(args) == 0


def test_an_answer_run_stopped_by_ctrl_c_says_how_far_it_got_and_that_a_rerun_resumes(
        tiny_pipeline, tmp_path, test_questions, capsys, monkeypatch):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:3]))
    out = tmp_path / "run"
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out),
            "--batch-size", "1"]
    calls, answer = [], Pipeline.answer

    def stopped(self, questions, **kw):   # Ctrl+C while the second batch is answered
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return answer(self, questions, **kw)

    monkeypatch.setattr(Pipeline, "answer", stopped)
    assert main(args) == 130
    assert f"{out}: stopped with 1 of 3 questions answered (in records.jsonl); the same command resumes" \
        in capsys.readouterr().err
    monkeypatch.setattr(Pipeline, "answer", answer)
    assert main(args) == 0 and "resuming: 1 of 3" in capsys.readouterr().out


def test_answer_refuses_to_resume_a_run_whose_pipeline_was_rebuilt_in_place(tiny_pipeline, tmp_path,
                                                                           test_questions, capsys):
    """An index written again under the same path (``xqa build`` rerun with another dense model)
    leaves the settings as they were; its config.json's time tells it, and the resume stops
    rather than mix the two indexes' answers. A run.json kept without these stamps resumes."""
    import os

    dense = tmp_path / "dense"
    shutil.copytree(Path(tiny_pipeline).parent / "dense", dense)
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:2]))
    out = tmp_path / "run"
    args = ["answer", "--config", str(tiny_pipeline), "--dense-index", str(dense), "--questions", str(qfile),
            "--out", str(out)]
    assert main(args) == 0
    built = json.loads((out / "run.json").read_text())["settings"]["built"]
    assert {"passages", "reader.model", "retrieval.dense_index", "retrieval.sparse_index"} <= set(built)
    first = (out / "records.jsonl").read_text().splitlines(keepends=True)[0]
    (out / "records.jsonl").write_text(first)                           # as if killed after one question
    os.utime(dense / "config.json", ns=(1, 1))                           # the dense index written again
    capsys.readouterr()
    assert main(args) == 1
    assert (f"{out} holds answers of a pipeline whose retrieval.dense_index was written again since (rebuilt "
            f"in place)") in capsys.readouterr().err
    assert (out / "records.jsonl").read_text() == first                 # nothing written
    # a copy of the pipeline in another folder is another pipeline, not one rebuilt in place
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(tiny_pipeline, elsewhere / "pipeline.json")
    moved = [a if a != str(tiny_pipeline) else str(elsewhere / "pipeline.json") for a in args]
    assert main(moved) == 1
    assert (f"{out} holds answers of the pipeline in {Path(tiny_pipeline).parent}, not of the one in {elsewhere}"
            in capsys.readouterr().err)
    settings = json.loads((out / "run.json").read_text())["settings"]
    del settings["built"]
    (out / "run.json").write_text(json.dumps({"settings": settings}))
    assert main(args) == 0
    assert "resuming: 1 of 2" in capsys.readouterr().out


def test_answer_and_search_give_a_question_with_nothing_to_search_for_no_answer_and_say_so(
        tiny_pipeline, tmp_path, test_questions, capsys):
    """A blank question and one of punctuation only are not searched (a search for '???' would answer
    with whatever ranks first): their predictions are empty, their passages none, and each run warns
    once, naming them."""
    real = test_questions[0]
    rows = [real.to_dict(), {**real.to_dict(), "id": "blank", "question": "   "},
            {**real.to_dict(), "id": "marks", "question": "¿¿??"}]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "run"
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 of 3 questions have nothing to search for" in err and "'blank', 'marks'" in err
    records = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
    assert records["blank"]["answer"] == records["marks"]["answer"] == ""
    assert "evidence" not in records["marks"] and records["marks"]["answered"] is False
    assert records[real.id]["answer"] and records[real.id]["evidence"]
    # each record's state, as formats.md lists it; nothing to search for is not found
    rec = records[real.id]
    assert records["marks"]["state"] == "not found"
    assert rec["state"] == ("answered" if rec["answered"] else "uncertain" if rec["found"] else "not found")
    preds = json.loads((out / "predictions.json").read_text())
    assert preds == {real.id: records[real.id]["answer"], "blank": "", "marks": ""}

    assert main(["search", "--config", str(tiny_pipeline), "--questions", str(qfile), "--k", "3",
                 "--out", str(tmp_path / "r.jsonl")]) == 0
    assert "xqa search: warning: 2 of 3 questions have nothing to search for" in capsys.readouterr().err
    assert [len(r.ctxs) for r in read_results(tmp_path / "r.jsonl")] == [3, 0, 0]
    assert main(["eval", "--retrieval", str(tmp_path / "r.jsonl"), "--k", "1", "3"]) == 0


def test_answer_and_search_with_lang_auto_identify_each_question_as_ask_does(
        tiny_pipeline, tmp_path, test_questions, monkeypatch, capsys):
    """A question file without languages: --lang auto identifies each question's, onto the
    pipeline's languages; one in a language without an index is searched as und and its record
    says what it reads as."""
    qs = test_questions[:3]
    truth = {q.question: q.lang for q in qs}
    truth[qs[2].question] = "fr"
    monkeypatch.setattr("xqa.langid.identify", lambda text: truth[text])
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps({k: v for k, v in q.to_dict().items() if k != "lang"},
                                        ensure_ascii=False) + "\n" for q in qs))
    out = tmp_path / "run"
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--lang", "auto",
                 "--out", str(out)]) == 0
    assert "--lang auto: 3 question(s) identified as" in capsys.readouterr().err
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [(r["lang"], r.get("identified")) for r in records] == [
        (qs[0].lang, None), (qs[1].lang, None), ("und", "fr")]
    assert all(r["evidence"] for r in records)
    assert (out / "predictions" / "und.json").is_file()
    assert main(["search", "--config", str(tiny_pipeline), "--questions", str(qfile), "--lang", "auto", "--k", "2",
                 "--out", str(tmp_path / "r.jsonl")]) == 0
    results = read_results(tmp_path / "r.jsonl")
    assert [(r.question.lang, len(r.ctxs)) for r in results] == [(qs[0].lang, 2), (qs[1].lang, 2), ("und", 2)]
    # the same questions as a text file, a question a line: the same records, ids by line
    lines = tmp_path / "mine.txt"
    lines.write_text("".join(q.question + "\n" for q in qs), encoding="utf-8")
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(lines), "--lang", "auto",
                 "--out", str(tmp_path / "lines")]) == 0
    by_line = [json.loads(line) for line in (tmp_path / "lines" / "records.jsonl").read_text().splitlines()]
    assert [r["id"] for r in by_line] == ["mine:1", "mine:2", "mine:3"]
    assert [(r["question"], r["lang"], r["answer"]) for r in by_line] == [
        (r["question"], r["lang"], r["answer"]) for r in records]


def test_answer_and_eval_with_lang_auto_take_and_score_the_same_questions(
        tiny_pipeline, tmp_path, test_questions, monkeypatch, capsys):
    """Two questions in languages the pipeline has no index for are both searched as und, but
    each is in its own language for --per-lang and the score, as xqa eval --lang auto (which
    knows no pipeline) takes them; a question of no identified language is left out of the
    score by both, not an error of eval's."""
    qs = test_questions[:3]
    truth = {qs[0].question: qs[0].lang, qs[1].question: "fr", qs[2].question: "sv", "???": "und"}
    monkeypatch.setattr("xqa.langid.identify", lambda text: truth[text])
    qfile = tmp_path / "q.jsonl"
    rows = [{k: v for k, v in q.to_dict().items() if k != "lang"} for q in qs]
    rows.append({"id": "none", "question": "???", "answers": ["x"]})
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "run"
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--lang", "auto",
                 "--per-lang", "1", "--out", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [(r["lang"], r.get("identified")) for r in records] == [
        (qs[0].lang, None), ("und", "fr"), ("und", "sv"), ("und", None)]
    scores = tmp_path / "scores.json"
    assert main(["eval", "--gold", str(qfile), "--lang", "auto", "--per-lang", "1", "--predictions",
                 str(out / "predictions.json"), "--json", str(scores)]) == 0
    assert "note: 1 question(s) left out, in und 1: the metric splits answers into words by language, and has " \
           "no rule for this one (und: no language identified, --lang auto)" in capsys.readouterr().err
    e2e = json.loads(scores.read_text())["end_to_end"]
    assert sorted(e2e["per_language"]) == sorted([qs[0].lang, "fr", "sv"])
    assert said.startswith(f"official MIA EM {e2e['macro']['em']:.2f} / F1 {e2e['macro']['f1']:.2f} on the 3 "
                           f"question(s) with answers (macro over 3 languages; 1 in und, which the metric does "
                           f"not score, left out"), said
    capsys.readouterr()   # the coverage check reads und as a language (its answer is empty: incomplete)
    assert main(["eval", "--gold", str(qfile), "--lang", "auto", "--coverage", "--predictions", str(out)]) == 1
    shown = capsys.readouterr()
    assert "und              1         0       1        0" in shown.out and "unknown language" not in shown.err


def test_a_second_answer_or_build_into_a_folder_being_written_is_refused_at_once(
        tiny_pipeline, tmp_path, test_questions, capsys):
    """Two `xqa answer` runs into one --out would append the same questions twice; two builds of
    one folder would train and index over each other: the second stops, naming the lock."""
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:2]))
    from xqa.artifacts import lock_file

    holders = []
    try:
        for folder in (tmp_path / "run", tmp_path / "build"):
            holders.append(subprocess.Popen(
                [sys.executable, "-c", "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
                 "print('locked', flush=True); sys.stdin.read()", str(lock_file(folder))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            assert holders[-1].stdout.readline().strip() == "locked"
        assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile),
                     "--out", str(tmp_path / "run")]) == 1
        assert (f"{tmp_path / 'run'} is being written by another xqa answer; wait for it to finish, or write into "
                f"another folder (the lock it holds: {lock_file(tmp_path / 'run')})" in capsys.readouterr().err)
        assert not (tmp_path / "run" / "records.jsonl").exists()
        assert main(["build", "--passages", str(tiny_pipeline.parent / "world" / "passages.jsonl"),
                     "--out", str(tmp_path / "build")]) == 1
        assert f"{tmp_path / 'build'} is being built by another process" in capsys.readouterr().err
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile),
                 "--out", str(tmp_path / "run")]) == 0
    assert len((tmp_path / "run" / "records.jsonl").read_text().splitlines()) == 2


def test_answer_in_two_processes_writes_what_one_process_writes(tiny_pipeline, tmp_path, test_questions):
    """torchrun: each process answers a strided share of every round, rank 0 writes them in order."""
    import os

    qs = test_questions[:13]                          # rounds of 2 x 4, the last one short
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs))
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--batch-size", "4"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    torchrun = Path(sys.executable).with_name("torchrun")
    proc = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "xqa.cli", *args,
                           "--out", str(tmp_path / "two")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def records(name):
        return [json.loads(line) for line in (tmp_path / name / "records.jsonl").read_text().splitlines()]

    one, two = records("one"), records("two")
    assert [r["id"] for r in two] == [q.id for q in qs]          # question order, each once
    assert [(r["answer"], [e["id"] for e in r["evidence"]]) for r in two] == \
        [(r["answer"], [e["id"] for e in r["evidence"]]) for r in one]
    assert json.loads((tmp_path / "two" / "predictions.json").read_text()) == \
        json.loads((tmp_path / "one" / "predictions.json").read_text())


def test_ask_prints_answer_and_evidence(tiny_pipeline, test_questions):
    q = test_questions[0]
    out = _cli("ask", q.question, "--config", tiny_pipeline, "--show", "2")
    assert out.returncode == 0, out.stderr
    assert "answer:" in out.stdout and "evidence:" in out.stdout
    assert f"question ({q.lang})" in out.stdout  # detected language
    # the n-best line shows at most 10 candidates and says how many more --json has
    record = json.loads(_cli("ask", q.question, "--config", tiny_pipeline, "--json").stdout)
    line = next(x for x in out.stdout.splitlines() if x.startswith("n-best: "))
    n = len(record["candidates"])
    assert (f"… {n - 10} more (--json)" in line) == (n > 10)
    assert line.count(" | ") == min(n, 10) - 1 + (n > 10)


def test_ask_says_what_it_loads_and_a_missing_index_is_an_error_before_any_model_loads(tiny_pipeline, test_questions,
                                                                                        tmp_path):
    out = _cli("ask", test_questions[0].question, "--config", tiny_pipeline, "--method", "sparse")
    assert out.returncode == 0, out.stderr
    loads = [x for x in out.stderr.splitlines() if x.startswith("xqa ask: load")]
    assert any("loading sparse index" in x for x in loads) and any("loaded reader" in x for x in loads), out.stderr
    assert not any("dense index" in x for x in loads)   # only what the method needs
    assert "loading" not in out.stdout                  # stdout holds the answer alone
    # the tiny build has no DHR index: said before torch, the JVM or language identification load
    probe = ("import sys; from xqa.cli import main; code = main(sys.argv[1:]); "
             "print(sorted(m for m in ('torch', 'jnius', 'lingua', 'faiss', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe, "ask", "Wer konzipierte QRpedia?", "--config",
                          str(tiny_pipeline), "--method", "dhr"], capture_output=True, text=True, timeout=120)
    assert "method 'dhr' needs a dhr index" in out.stderr and "it offers: sparse" in out.stderr
    assert out.stdout.strip() == "[]", out.stdout
    # an index the config names that is not there (moved, not built): the same, before anything loads
    build = Path(tiny_pipeline).parent
    dense = json.loads(Path(tiny_pipeline).read_text())["retrieval"]["dense_index"]
    for part in build.iterdir():   # the build without its dense index
        if part.name != dense:
            (tmp_path / part.name).symlink_to(part)
    out = subprocess.run([sys.executable, "-c", probe, "ask", "Wer konzipierte QRpedia?", "--config",
                          str(tmp_path / "pipeline.json"), "--method", "hybrid"],
                         capture_output=True, text=True, timeout=120)
    assert f"{tmp_path / dense}: no such folder: the dense index the pipeline config names (--dense-index)" \
        in out.stderr, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_ask_dash_answers_each_line_of_stdin_with_the_pipeline_loaded_once(tiny_pipeline, test_questions):
    """``xqa ask -``: a question a line, each answered as the single-question command answers it;
    a line that cannot be asked is named by its number and the others still answered (exit 1)."""
    a, b = test_questions[0], test_questions[1]
    lines = f"{a.question}\n\n???\n{b.question}\n"
    cmd = [sys.executable, "-m", "xqa.cli", "ask", "-", "--config", str(tiny_pipeline), "--lang", a.lang]
    out = subprocess.run(cmd + ["--json"], input=lines, capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    records = [json.loads(x) for x in out.stdout.splitlines()]
    assert [r["id"] for r in records] == ["1", "3", "4"]     # the line numbers; the blank line skipped
    assert records[1] == {"id": "3", "question": "???", "error": "the question '???' has no letters or digits: "
                                                                 "there is nothing to search for"}
    records = [records[0], records[2]]
    assert "xqa ask: <stdin>:3: the question '???' has no letters or digits" in out.stderr
    assert "2 question(s) answered, 1 could not be asked" in out.stderr
    assert sum("loading reader" in x for x in out.stderr.splitlines()) == 1
    one = json.loads(_cli("ask", b.question, "--config", tiny_pipeline, "--lang", a.lang, "--json").stdout)
    assert records[1]["answer"] == one["answer"] and records[1]["evidence"] == one["evidence"]
    # as text: the single command's lines, one answer after another
    out = subprocess.run(cmd + ["--show", "1"], input=f"{a.question}\n{b.question}\n", capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("answer") >= 2 and out.stdout.count("evidence:") == 2
    assert f"question ({a.lang}): {b.question}" in out.stdout


def test_ask_dash_on_a_terminal_prompts_for_each_question(tiny_pipeline, test_questions):
    import os
    import pty

    q = test_questions[0]
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "xqa.cli", "ask", "-", "--config", str(tiny_pipeline),
                             "--lang", q.lang, "--show", "1"],
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    os.write(master, f"{q.question}\n".encode() + b"\x04")   # a question, then Ctrl-D at a line's start
    out, err = proc.communicate(timeout=300)
    os.close(master)
    assert proc.returncode == 0, err
    assert "ready: one question a line" in err and err.count("question> ") == 2   # before each line read
    assert out.count("evidence:") == 1 and f"question ({q.lang}): {q.question}" in out


def test_ctrl_c_at_the_ask_prompt_stops_one_answer_and_the_next_question_is_answered(
        tiny_pipeline, test_questions, monkeypatch, capsys):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    a, b = test_questions[0], test_questions[1]
    asked = []
    real_ask = Pipeline.ask

    def ask(self, text, *args, **kwargs):
        asked.append(text)
        if len(asked) == 1:
            raise KeyboardInterrupt
        return real_ask(self, text, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "ask", ask)
    monkeypatch.setattr(sys, "stdin", Terminal(f"{a.question}\n{b.question}\n"))
    assert main(["ask", "-", "--config", str(tiny_pipeline), "--lang", a.lang, "--json"]) == 0
    out, err = capsys.readouterr()
    assert asked == [a.question, b.question]
    assert "interrupted: that question is left unanswered" in err
    assert [json.loads(x)["id"] for x in out.splitlines()] == ["2"]
    # from a pipe, Ctrl-C stops the whole command
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{a.question}\n{b.question}\n"))
    asked.clear()
    assert main(["ask", "-", "--config", str(tiny_pipeline), "--lang", a.lang, "--json"]) == 130
    assert asked == [a.question]


def test_ctrl_c_while_bm25_is_loaded_ends_the_command_as_python_says_not_the_java_vm(
        tiny_pipeline, test_questions, tmp_path):
    """Once the JVM runs (BM25), Ctrl-C must still reach Python: the VM's own SIGINT handler would
    run the process's exit from a Java thread, skipping xqa's "interrupted" and crashing the process
    (SIGSEGV, an hs_err_pid*.log) when torch was inside a kernel on the main thread."""
    import signal

    q = test_questions[0]
    proc = subprocess.Popen([sys.executable, "-m", "xqa.cli", "ask", "-", "--config", str(tiny_pipeline),
                             "--lang", q.lang, "--method", "hybrid", "--json"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(f"{q.question}\n" * 200)
        proc.stdin.flush()
        first = proc.stdout.readline()       # one question answered: the VM runs, more answers are under way
        assert json.loads(first)["id"] == "1"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.rstrip().endswith("interrupted"), err[-2000:]
    assert not list(tmp_path.glob("hs_err_pid*.log"))


def test_ask_says_when_nothing_was_retrieved(tiny_pipeline):
    # no word of it is in any passage: the BM25 methods find nothing, the dense one always something
    out = _cli("ask", "Qqzzkk xxvvqq?", "--lang", "en", "--config", tiny_pipeline, "--method", "sparse+roman",
               "--fallback", "none")
    assert out.returncode == 0, out.stderr
    assert "sparse+roman retrieved no passage" in out.stdout
    assert "n-best:  (" not in out.stdout    # an empty candidate is shown as (empty), not as nothing
    # by default the config's dense fallback searches again, and says so
    out = _cli("ask", "Qqzzkk xxvvqq?", "--lang", "en", "--config", tiny_pipeline, "--method", "sparse+roman")
    assert out.returncode == 0, out.stderr
    assert "retrieved no passage; these come from the dense fallback" in out.stdout
    assert "source=dense (fallback)" in out.stdout and " 1. [" in out.stdout
    out = _cli("ask", "Qqzzkk xxvvqq?", "--lang", "en", "--config", tiny_pipeline, "--method", "dense")
    assert out.returncode == 0 and "retrieved no passage" not in out.stdout and " 1. [" in out.stdout


def test_answer_and_retrieve_say_what_they_take_where_given_something_else(pipe, test_questions, tiny_pipeline):
    """A question's text, one record, a flat exclude list or contexts of another shape: said, not a
    traceback from deep inside or a silent mispairing."""
    qs = test_questions[:2]
    with pytest.raises(XqaError, match=r"questions: a list of Question records .*not text; Pipeline.ask"):
        pipe.answer(qs[0].question)
    with pytest.raises(XqaError, match=r"questions\[0\]: a Question record .*not str"):
        pipe.answer([qs[0].question])
    with pytest.raises(XqaError, match=r"questions: a list of Question records, not one; pass \[question\]"):
        pipe.retrieve(qs[0])
    with pytest.raises(XqaError, match=r"exclude\[0\]: a collection of passage ids .*not str"):
        pipe.answer(qs[:1], exclude=["some-passage"])
    with pytest.raises(XqaError, match=r"exclude: 1 entries for 2 questions"):
        pipe.answer(qs, exclude=[{"some-passage"}])
    [ctxs] = pipe.retrieve(qs[:1], k=3)
    with pytest.raises(XqaError, match=r"contexts: 3 entries for 1 questions"):
        pipe.answer(qs[:1], contexts=ctxs)
    with pytest.raises(XqaError, match=r"contexts\[0\]: a collection of Context records .*not Context"):
        pipe.answer(qs[:1], contexts=ctxs[:1])
    with pytest.raises(XqaError, match=r"contexts\[0\]: Context records .*found tuple"):
        pipe.answer(qs[:1], contexts=[[("p", "t", "x")]])
    # a generator is read once, and answered as the list is
    assert [a.text for a in pipe.answer(q for q in qs)] == [a.text for a in pipe.answer(qs)]
    # excluding the first passage answers as if the collection lacked it
    [without] = pipe.answer(qs[:1], exclude=[{ctxs[0].id}])
    assert without.evidence and ctxs[0].id not in {e.context.id for e in without.evidence}
    # a built folder stands for its pipeline.json
    assert Pipeline.load(tiny_pipeline.parent).config.base_dir == Pipeline.load(tiny_pipeline).config.base_dir
    with pytest.raises(XqaError, match="a folder without pipeline.json"):
        Pipeline.load(tiny_pipeline.parent / "bm25")


def test_retrieve_falls_back_only_for_questions_the_method_finds_nothing_for(tiny_pipeline):
    pipe = Pipeline.load(tiny_pipeline)
    found = next(p for p in pipe.store if p.lang == "en")
    qs = [Question(id="none", question="Qqzzkk xxvvqq?", lang="en"),
          Question(id="some", question=found.title, lang="en")]
    got = pipe.retrieve(qs, k=5, method="sparse")
    assert pipe.fallback_for("sparse") == "dense" and pipe.fallback_for("dense") is None
    assert pipe.fallback_for("sparse", fallback="none") is None    # an override wins over the config
    assert len(got[0]) == 5 and all(c.source == "dense (fallback)" for c in got[0])
    assert got[1] and all(c.source == "sparse" for c in got[1])
    # a language with no BM25 index (--lang de here) is searched in the indexes of its script, as
    # a question of unknown language is; one in a script no index is written in (Greek) finds
    # nothing there, and the fallback answers it
    german = [Question(id="de", question=found.title, lang="de")]
    assert "de" not in pipe.config.languages
    [moved] = pipe.retrieve(german, k=5, method="sparse")
    assert found.id in [c.id for c in moved] and {c.source for c in moved} == {"sparse"}
    [greek] = pipe.retrieve([Question(id="el", question="Ποιος έγραψε την Οδύσσεια;", lang="el")], k=5,
                            method="sparse")
    assert len(greek) == 5 and all(c.source == "dense (fallback)" for c in greek)
    pipe.config.retrieval.fallback = "none"
    plain = pipe.retrieve(qs, k=5, method="sparse")
    assert plain[0] == [] and pipe.fallback_for("sparse") is None
    assert [c.id for c in plain[1]] == [c.id for c in got[1]]       # a question BM25 answers: untouched
    with pytest.raises(XqaError, match="no BM25 index for language 'de'"):   # no fallback: said, not empty
        pipe.retrieve(german, k=5, method="sparse")
    with pytest.raises(XqaError, match="retrieval.fallback 'bm42'"):
        PipelineConfig.from_dict({"retrieval": {"fallback": "bm42"}})
    # one spelling for "never", in pipeline.json as on the command line (--fallback none)
    assert PipelineConfig.from_dict({"retrieval": {"fallback": "none"}}).retrieval.fallback == "none"
    with pytest.raises(XqaError, match="retrieval.fallback' should be a string, found null"):
        PipelineConfig.from_dict({"retrieval": {"fallback": None}})


def test_a_corpus_named_on_the_command_line_does_not_mix_with_the_default_build(tiny_pipeline, tmp_path,
                                                                                monkeypatch, capsys):
    """`xqa search --sparse-index X --passages P` searches X over P alone: the default build's
    dense fallback (which would return passages P does not hold) is not inherited."""
    from retriever.sparse import build_sparse_indexes
    from xqa.io import write_passages, write_questions
    from xqa.records import Passage

    monkeypatch.setenv("XQA_CONFIG", str(tiny_pipeline))          # a default config with a dense fallback
    passages = tmp_path / "p.jsonl"
    write_passages(passages, [Passage("own-1", "Zorbatu", "Zorbatu is a river in the north.", "en"),
                              Passage("own-2", "Quellin", "Quellin is a mountain.", "en")])
    build_sparse_indexes(list(read_passages(passages)), tmp_path / "bm25", progress=False)
    questions = tmp_path / "q.jsonl"
    write_questions(questions, [Question("found", "Where is the Zorbatu river?", "en"),
                                Question("none", "Qqzzkk xxvvqq?", "en")])
    out = tmp_path / "r.jsonl"
    assert main(["search", "--sparse-index", str(tmp_path / "bm25"), "--passages", str(passages),
                 "--questions", str(questions), "--out", str(out)]) == 0
    found, none = read_results(out)
    assert found.ctxs[0].id == "own-1" and {c.source for c in found.ctxs} == {"sparse"}
    assert none.ctxs == ()                                         # BM25 finds nothing; no default fallback
    # without their passages, named indexes are an error that says what to add
    assert main(["search", "--sparse-index", str(tmp_path / "bm25"), "--questions", str(questions),
                 "--out", str(out)]) == 1
    assert "add --passages" in capsys.readouterr().err
    # with --config the command line overrides that config's fields: the user asked for the mix
    args = SimpleNamespace(config=str(tiny_pipeline), sparse_index=str(tmp_path / "bm25"), passages=str(passages),
                           dense_index=None, spar_index=None, roman_index=None, method=None)
    cfg = pipeline_config(args)
    assert cfg.retrieval.dense_index.endswith("dense") and cfg.passages == str(passages)


def test_the_method_for_named_indexes_uses_the_most_of_them():
    def method(**named):
        return method_for(PipelineConfig.from_dict({"retrieval": named}))

    assert method(sparse_index="b") == "sparse"
    assert method(sparse_index="b", dense_index="d") == "scd"
    assert method(sparse_index="b", roman_index="r") == "sparse+roman"
    assert method(spar_index="s", sparse_index="b") == "spar+scd"
    with pytest.raises(XqaError, match="no index to search"):
        method()


def test_ask_empty_question_is_a_clear_error(tiny_pipeline):
    out = _cli("ask", "   ", "--config", tiny_pipeline)
    assert out.returncode == 1 and "empty" in out.stderr and "Traceback" not in out.stderr
    out = _cli("ask", " ?!… ", "--config", tiny_pipeline)
    assert out.returncode == 1 and "'?!…' has no letters or digits" in out.stderr
    assert "loading" not in out.stderr and "Traceback" not in out.stderr   # said before anything loads


def test_k_and_n_passages_below_one_are_errors_not_the_config_s(pipe, tiny_pipeline, test_questions):
    q = test_questions[0]
    for kw in ({"k": 0}, {"n_passages": 0}, {"k": -3}, {"n_passages": 2.5}, {"k": True}):
        with pytest.raises(XqaError, match=f"{next(iter(kw))} must be a whole number of at least 1"):
            pipe.answer([q], **kw)
    with pytest.raises(XqaError, match="k must be"):
        pipe.retrieve([q], k=0)
    assert pipe.answer([]) == []                                       # nothing asked, nothing answered
    with pytest.raises(XqaError, match=r"question 'typo': unknown language code 'jp'; give one of"):
        pipe.answer([q, replace(q, id="typo", lang="jp")])
    assert [len(c) for c in pipe.retrieve([q], k=np.int64(2))] == [2]   # a numpy count is a count
    out = _cli("ask", q.question, "--config", tiny_pipeline, "--n-passages", "0")
    assert out.returncode == 2 and "argument --n-passages: must be at least 1, got 0" in out.stderr


def test_a_given_language_is_a_code_xqa_knows_written_as_xqa_writes_it(pipe, tiny_pipeline):
    from xqa.pipeline import given_language

    assert given_language("DE") == "de" and given_language("zh-CN") == "zh_cn" and given_language("und") == "und"
    assert given_language("xx", ["xx"]) == "xx"                   # a pipeline's own code stands
    with pytest.raises(XqaError, match="unknown language code 'xx'"):
        given_language("xx")
    asked = pipe.ask(pipe.config.examples[0]["question"], lang=pipe.config.languages[0].upper())
    assert asked.question.lang == pipe.config.languages[0]
    out = _cli("ask", "Who?", "--config", tiny_pipeline, "--lang", "english")
    assert out.returncode == 1 and "unknown language code 'english'" in out.stderr
    assert "loading" not in out.stderr                             # said before anything loads


def test_a_question_without_letters_or_digits_is_not_searched(tiny_pipeline):
    from xqa.batching import Batcher

    pipe = Pipeline.load(tiny_pipeline)
    for text in ("", "  ", "???", "🗼!"):
        with pytest.raises(XqaError, match="empty|no letters or digits"):
            pipe.ask(text)
    batcher = Batcher(pipe)
    try:
        with pytest.raises(XqaError, match="no letters or digits"):
            batcher.ask("¿?")
    finally:
        batcher.close()
    assert question_text("  Wer?  ") == "Wer?" and question_text("1984") == "1984"
    for bad, said in ((None, "NoneType None"), (1984, "int 1984"), (b"Wer?", "bytes b'Wer?'")):
        with pytest.raises(XqaError, match=re.escape(f"the question is {said}, not text")):
            question_text(bad)


def test_a_question_in_bytes_that_are_not_utf8_is_a_clear_error_before_anything_loads(tiny_pipeline):
    """Python reads such bytes from argv and stdin as lone surrogates (surrogateescape), which
    the tokenizers refuse with a TypeError: the question is refused first, naming the byte."""
    with pytest.raises(XqaError, match="not UTF-8 text: the byte 0xe9 at character 4"):
        question_text("Caf\udce9 au lait?")
    with pytest.raises(XqaError, match="a lone surrogate U\\+D83D at character 7"):
        question_text("Smile \ud83d?")
    out = subprocess.run([sys.executable, "-m", "xqa.cli", "ask", b"Caf\xe9 au lait?", "--config", str(tiny_pipeline)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "xqa ask: error: the question is not UTF-8 text: the byte 0xe9 at character 4" in out.stderr
    assert "loading" not in out.stderr


def test_report_retrieval_tables_plot_and_weights(tiny_pipeline, tmp_path):
    """`xqa report retrieval`: the table's top-k values are points of the recall curves, the curves
    never fall with k, and the weights the methods ran with (cross-script w included) are recorded."""
    out = tmp_path / "rep"
    assert main(["report", "retrieval", "--config", str(tiny_pipeline), "--max-questions", "30",
                 "--methods", "bm25", "roman", "sparse+roman", "--ks", "1", "5", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    cfg = json.loads(Path(tiny_pipeline).read_text())["retrieval"]
    assert rep["n"] == 30 and rep["weights"]["roman_weight"] == cfg.get("roman_weight", 1.0)
    for split, per in rep["curves"].items():
        assert set(per) == {"BM25", "cross-script BM25", "BM25+cross-script"}
        for label, curve in per.items():
            assert all(a <= b for a, b in zip(curve, curve[1:])), (split, label)
            assert rep["scores"][split][label] == {"1": curve[0], "5": curve[4]}
    assert rep["scores"]["same-language"]["BM25"]["5"] > 50   # the world's questions name their passages
    md = (out / "report.md").read_text()
    assert "w (cross-script) = " in md and "| BM25+cross-script |" in md
    assert (out / "recall.png").stat().st_size > 0


def _config_with_calibrator(tiny_pipeline, folder: Path, threshold: float) -> Path:
    """The tiny pipeline's config with a hand-made answerability calibrator (P(right) rises with the
    fused probability) and ``threshold``, its paths made absolute so it can live in ``folder``."""
    cfg = PipelineConfig.load(tiny_pipeline)
    cfg.passages = cfg.path(cfg.passages)
    for name in ("sparse_index", "dense_index", "dense_model", "spar_index", "roman_index"):
        setattr(cfg.retrieval, name, cfg.path(getattr(cfg.retrieval, name)))
    cfg.reader.model, cfg.reader.labels = cfg.path(cfg.reader.model), cfg.path(cfg.reader.labels)
    cfg.reader.answerability = {"features": ["log_p", "agreement"], "mean": [-1.0, 0.5], "scale": [1.0, 0.5],
                                "coef": [1.5, 0.5], "intercept": 0.0}
    cfg.reader.answerability_threshold = threshold
    path = folder / f"pipeline-{threshold}.json"
    cfg.save(path)
    return path


def test_answer_records_carry_the_calibrated_probability_and_abstain_writes_empty_answers(
        tiny_pipeline, tmp_path, test_questions):
    qs = test_questions[:6]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs))
    runs = {}
    for threshold in (0.0, 1.0):
        cfg = _config_with_calibrator(tiny_pipeline, tmp_path, threshold)
        out = tmp_path / f"run-{threshold}"
        assert main(["answer", "--config", str(cfg), "--questions", str(qfile), "--out", str(out), "--abstain"]) == 0
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        runs[threshold] = records, json.loads((out / "predictions.json").read_text())
        for r in records:
            assert 0.0 < r["confidence"] < 1.0
            assert r["answered"] is (threshold == 0.0)
            assert set(r["features"]) >= {"log_p", "agreement", "retrieval_top"}
    (sure, sure_preds), (unsure, unsure_preds) = runs[0.0], runs[1.0]
    assert [r["confidence"] for r in sure] == pytest.approx([r["confidence"] for r in unsure])
    assert sure_preds == {r["id"]: r["answer"] for r in sure}     # every answer shown
    assert set(unsure_preds.values()) == {""}                     # none: each below the threshold
    assert [r["answer"] for r in unsure] == [r["answer"] for r in sure]   # the records keep the guesses

    cal = runs[0.0][0]
    order = sorted(cal, key=lambda r: r["features"]["log_p"])
    same_agreement = [r for r in order if r["features"]["agreement"] == order[0]["features"]["agreement"]]
    assert [r["confidence"] for r in same_agreement] == sorted(r["confidence"] for r in same_agreement)

    out = _cli("ask", qs[0].question, "--config", _config_with_calibrator(tiny_pipeline, tmp_path, 1.0))
    assert out.returncode == 0, out.stderr
    assert "answer: no answer found in this collection (P(right)" in out.stdout
    assert f"best guess: {unsure[0]['answer']}" in out.stdout


def test_a_calibrator_judges_the_answers_of_the_retrieval_method_it_was_fitted_on(
        tiny_pipeline, tmp_path, test_questions, capsys):
    """Retrieval scores are features, and their scale is the method's (BM25's are tens): a
    calibrator fitted on one method's answers gives another method's none, and --abstain with
    another method is refused."""
    path = _config_with_calibrator(tiny_pipeline, tmp_path, 0.0)
    cfg = PipelineConfig.load(path)
    cfg.reader.answerability["fitted_on"] = {"method": "sparse"}
    cfg.save(path)
    pipe = Pipeline(PipelineConfig.load(path))
    q = test_questions[0]
    fitted = pipe.ask(q.question, q.lang, method="sparse").answer
    other = pipe.ask(q.question, q.lang, method="dense").answer
    assert 0.0 < fitted.confidence < 1.0
    assert other.confidence is None and other.answered is bool(other.text.strip()) and other.features
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(q.to_dict(), ensure_ascii=False) + "\n")
    args = ["answer", "--config", str(path), "--questions", str(qfile), "--abstain"]
    assert main([*args, "--method", "dense", "--out", str(tmp_path / "dense")]) == 1
    assert "fitted on answers retrieved by sparse, not dense" in capsys.readouterr().err
    assert main([*args, "--method", "sparse", "--out", str(tmp_path / "sparse")]) == 0
    assert main(["ask", q.question, "--lang", q.lang, "--config", str(path), "--method", "dense"]) == 0
    said = capsys.readouterr().out
    assert "(fused p = " in said and "retrieval: dense; no P(right): the calibrator was fitted on sparse's answers)" in said
    assert main(["ask", q.question, "--lang", q.lang, "--config", str(path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["question"], record["lang"]) == (q.question, q.lang) and list(record)[:3] == ["id", "question", "lang"]
    assert record["detected"] is False and record["method"] == PipelineConfig.load(path).retrieval.method
    assert record["n_passages"] == PipelineConfig.load(path).reader.n_passages and record["k"] >= record["n_passages"]


def test_abstain_with_a_reader_without_a_calibrator_is_refused(tiny_pipeline, tmp_path, test_questions, capsys):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps(test_questions[0].to_dict(), ensure_ascii=False) + "\n")
    out = tmp_path / "run"
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out),
                 "--abstain"]) == 1
    assert "--abstain leaves out answers by their calibrated probability, and the reader fid has no " \
           "calibrator" in capsys.readouterr().err and not out.exists()


def test_answer_submission_writes_the_mia_eval_ai_file_that_xqa_eval_reads(tiny_pipeline, tmp_path,
                                                                           test_questions, capsys):
    qs = test_questions[:4]
    records = [q.to_dict() for q in qs]
    for i, r in enumerate(records[2:]):   # two MKQA questions: ids NUMBER_LANG, as the MKQA files write them
        r["id"] = f"-40{i}_{r['lang']}"
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    out = tmp_path / "run"
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(out),
                 "--submission"]) == 0
    said = capsys.readouterr().out
    submission = json.loads((out / "submission.json").read_text())
    predictions = json.loads((out / "predictions.json").read_text())
    mkqa = {f"mkqa-{r['lang']}" for r in records[2:]}
    assert set(submission) == {"xor-tydi", *mkqa}
    assert submission["xor-tydi"] == {r["id"]: predictions[r["id"]] for r in records[:2]}
    assert sum(len(v) for v in submission.values()) == 4
    assert "MIA submission → " in said and "eval.ai wants every subset, and it lacks mkqa-ar" in said
    # xqa eval reads it as the eval.ai object and scores what predictions.json scores
    scores = []
    for predicted in (out / "submission.json", out / "predictions.json"):
        assert main(["eval", "--gold", str(qfile), "--predictions", str(predicted), "--mia"]) == 0
        scores.append(capsys.readouterr().out)
    assert scores[0] == scores[1] and "MIA" in scores[0]
    # another question set into the same folder: its outputs are this run's alone
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[:1]))
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(tmp_path / "two.jsonl"),
                 "--out", str(out)]) == 0
    assert "removed " in capsys.readouterr().out and not (out / "submission.json").exists()
    assert list(json.loads((out / "predictions.json").read_text())) == [records[0]["id"]]
    assert [p.name for p in (out / "predictions").iterdir()] == [f"{records[0]['lang']}.json"]


def test_the_not_found_threshold_applies_to_p_answerable_and_splits_uncertain_from_not_found(
        tiny_pipeline, tmp_path, test_questions):
    qs = test_questions[:6]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs))
    path = _config_with_calibrator(tiny_pipeline, tmp_path, 1.0)   # no answer is confident
    cfg = PipelineConfig.load(path)
    cfg.reader.answerable = {"features": ["retrieval_top"], "mean": [15.0], "scale": [10.0], "coef": [1.5],
                             "intercept": 0.0}
    probe = Pipeline(cfg)
    held = [probe.answer([q])[0].answerable for q in qs]
    assert all(0.0 < p < 1.0 for p in held) and len(set(held)) > 1
    cfg.reader.not_found_threshold = sorted(held)[len(held) // 2]   # half above, half below
    cfg.save(path)
    out = tmp_path / "run"
    assert main(["answer", "--config", str(path), "--questions", str(qfile), "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    for r, p in zip(records, held):
        assert r["answerable"] == pytest.approx(p) and r["answered"] is False
        assert r["found"] is (p >= cfg.reader.not_found_threshold)
    assert {r["found"] for r in records} == {True, False}
    likely = next(q for q, r in zip(qs, records) if r["found"])
    out = _cli("ask", likely.question, "--config", path)
    assert out.returncode == 0, out.stderr
    assert "answer (uncertain): " in out.stdout and "no answer found" not in out.stdout


def test_hide_gold_answers_without_the_questions_own_passages(tiny_pipeline, tmp_path, test_questions,
                                                              capsys):
    qs = test_questions[:8]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in qs))
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile)]
    assert main([*args, "--out", str(tmp_path / "all")]) == 0
    assert main([*args, "--out", str(tmp_path / "hidden"), "--hide-gold"]) == 0

    def evidence(name):
        return {r["id"]: r for r in map(json.loads, (tmp_path / name / "records.jsonl").read_text().splitlines())}

    full, hidden = evidence("all"), evidence("hidden")
    gold_seen = 0
    for q in qs:
        gold = set(q.meta["positive_ids"])
        ids = [e["id"] for e in hidden[q.id]["evidence"]]
        assert hidden[q.id]["gold_hidden"] is True and "gold_hidden" not in full[q.id]
        assert ids and not set(ids) & gold          # other passages are read, never the question's own
        gold_seen += bool(gold & {e["id"] for e in full[q.id]["evidence"]})
    assert gold_seen >= len(qs) // 2                # ... which the whole collection's run did read
    # questions of another collection: nothing of theirs would be hidden, so they are refused
    other = [{**{k: v for k, v in q.to_dict().items() if k != "xling"}, "positive_ids": [f"elsewhere:{i}"]}
             for i, q in enumerate(qs[:3])]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in other))
    capsys.readouterr()
    assert main(["answer", "--config", str(tiny_pipeline), "--questions", str(tmp_path / "other.jsonl"),
                 "--out", str(tmp_path / "other"), "--hide-gold"]) == 1
    assert "--hide-gold: 3 of 3 questions name no passage of this collection" in capsys.readouterr().err
    assert not (tmp_path / "other" / "records.jsonl").exists()

def test_a_hide_gold_run_resumes_only_with_the_flag(tiny_pipeline, tmp_path, test_questions, capsys):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:2]))
    args = ["answer", "--config", str(tiny_pipeline), "--questions", str(qfile), "--out", str(tmp_path / "r")]
    assert main([*args, "--hide-gold"]) == 0
    capsys.readouterr()
    assert main(args) == 1
    assert "holds answers with --hide-gold" in capsys.readouterr().err


def test_loading_models_draws_no_per_model_weight_bar_and_restores_the_setting(tiny_pipeline, capfd):
    from transformers.utils import logging as hf_logging

    said = []
    pipe = Pipeline(PipelineConfig.load(tiny_pipeline), say=said.append)
    assert hf_logging.is_progress_bar_enabled()
    pipe.reader                                          # loads the reader's model
    assert "Loading weights" not in capfd.readouterr().err
    assert any(s.startswith("loaded reader") for s in said)
    assert hf_logging.is_progress_bar_enabled()          # as it was before
    hf_logging.disable_progress_bar()
    try:
        Pipeline(PipelineConfig.load(tiny_pipeline), say=said.append).reader
        assert not hf_logging.is_progress_bar_enabled()  # a user's "off" stays off
    finally:
        hf_logging.enable_progress_bar()


def test_tune_alpha_tunes_at_the_depth_the_pipeline_fuses_at_unless_told(tiny_pipeline, test_questions, tmp_path,
                                                                         capsys):
    """The min-max normalised hybrid ranks by each list's ends: tuned on lists deeper than the
    pipeline fuses, the best α is another ranking's. By default each side is searched to the
    pipeline's K; another --depth is said; --no-normalize tunes raw scores whatever the config."""
    from xqa.cli import main

    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q.to_dict(), ensure_ascii=False) + "\n" for q in test_questions[:3]))
    k = json.loads(Path(tiny_pipeline).read_text())["retrieval"]["k"]
    out = tmp_path / "alpha.json"
    base = ["tune", "alpha", "--config", str(tiny_pipeline), "--dev", str(qfile), "--at", "1", "--step", "1.0",
            "--out", str(out)]
    assert main(base) == 0
    assert json.loads(out.read_text())["depth"] == k and "note: each side was searched" not in capsys.readouterr().out
    assert main([*base, "--depth", str(k + 5), "--no-normalize"]) == 0
    record = json.loads(out.read_text())
    assert record["depth"] == k + 5 and record["normalize"] is False
    assert (f"note: each side was searched {k + 5} deep; this pipeline fuses each side's top {k} (retrieval.k)"
            in capsys.readouterr().out)


def test_tuning_judges_only_questions_it_can_judge_and_refuses_a_set_of_none(tiny_pipeline, test_questions, tmp_path,
                                                                           capsys):
    """Questions without answers scored as misses (or, for recall, left out under a count that
    named them) tuned α to 0 on a set of none, written into the config; a grid that cannot be is
    said before the searches."""
    from xqa.cli import main

    config = tmp_path / "pipeline.json"
    shutil.copy(tiny_pipeline, config)
    cfg = json.loads(config.read_text())
    cfg["passages"] = str(Path(tiny_pipeline).parent / cfg["passages"])
    for key in ("sparse_index", "dense_index", "spar_index", "roman_index", "dhr_index"):
        if cfg["retrieval"].get(key):
            cfg["retrieval"][key] = str(Path(tiny_pipeline).parent / cfg["retrieval"][key])
    config.write_text(json.dumps(cfg))
    before = config.read_text()
    rows = [q.to_dict() for q in test_questions[:4]]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("answers", "answers_en")},
                                       ensure_ascii=False) + "\n" for r in rows))
    assert main(["tune", "alpha", "--config", str(config), "--dev", str(bare), "--write-config"]) == 1
    assert "none of the 4 questions given has answers" in capsys.readouterr().err
    assert config.read_text() == before   # nothing written
    half = tmp_path / "half.jsonl"
    half.write_text("".join(json.dumps(r if i % 2 else {k: v for k, v in r.items() if k not in ("answers", "answers_en")},
                                       ensure_ascii=False) + "\n" for i, r in enumerate(rows)))
    out = tmp_path / "alpha.json"
    assert main(["tune", "alpha", "--config", str(config), "--dev", str(half), "--at", "1", "--step", "1.0",
                 "--out", str(out)]) == 0
    assert "note: 2 of 4 questions have no answers: left out, 2 judged" in capsys.readouterr().err
    assert json.loads(out.read_text())["questions"] == 2
    assert main(["tune", "alpha", "--config", str(config), "--dev", str(half), "--max-alpha", "0"]) == 1
    err = capsys.readouterr().err
    assert "a grid from 0 to 0" in err and "note:" not in err   # said before the questions were even judged


def test_tune_alpha_reads_the_hybrids_scores_as_the_pipeline_does_unless_told(tiny_pipeline, test_questions, tmp_path):
    """Without --normalize, α is tuned on scores read as the pipeline config reads them (the
    default pipeline's are normalised; tuned on raw ones, --write-config would switch the
    pipeline to raw scores without a word); another pair's hybrid is raw, as its method is."""
    from xqa.evaluation.tuning import AlphaTuneConfig, tune_alpha

    pipe = Pipeline.load(tiny_pipeline)
    qs = test_questions[:3]
    kept = pipe.config.retrieval.normalize
    try:
        for configured, given, pair, read in ((True, None, "hybrid", True), (False, None, "hybrid", False),
                                              (True, False, "hybrid", False), (True, None, "sparse+roman", False)):
            pipe.config.retrieval.normalize = configured
            out = tmp_path / "alpha.json"
            tune_alpha(pipe, qs, AlphaTuneConfig(pair=pair, at=1, depth=5, step=1.0, normalize=given, out=str(out)))
            assert json.loads(out.read_text())["normalize"] is read, (configured, given, pair)
    finally:
        pipe.config.retrieval.normalize = kept
