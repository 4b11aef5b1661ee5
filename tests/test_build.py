"""``xqa build``: a dozen real paragraphs become a pipeline that answers; reruns skip; bad input
fails with file:line and leaves nothing behind."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xqa.cli import main

ROOT = Path(__file__).resolve().parents[1]


from real_corpus import dozen as _dozen  # noqa: E402


@pytest.mark.slow
def test_a_dozen_real_paragraphs_build_every_stage_and_answer(real_build, capsys):
    src, out, asked = real_build
    for part in ("encoder", "bm25", "roman", "dense", "lexical/best", "spar", "reader"):
        assert (out / part / "config.json").is_file(), part
    cfg = json.loads((out / "pipeline.json").read_text())
    assert cfg["about"]["passages"] == 12 and set(cfg["languages"]) >= {"de", "en", "ja", "ko", "sw"}
    right = 0
    for q in asked:
        capsys.readouterr()
        assert main(["ask", q["question"], "--config", str(out / "pipeline.json"), "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        assert record["answer"] and record["evidence"]
        assert any(record["answer"] in e["text"] for e in record["evidence"])   # a span, as written
        # the answer as the German paragraph or its English twin writes it (both are searched)
        golds = [*q["answers"], *q["xling"]["en"]["answers"]]
        right += any(a.lower() in record["answer"].lower() or record["answer"].lower() in a.lower()
                     for a in golds)
    assert right >= len(asked) // 2, f"{right} of {len(asked)} answered"
    for method in ("dense", "scd", "spar", "hybrid", "sparse+roman"):
        assert main(["ask", asked[0]["question"], "--config", str(out / "pipeline.json"), "--method", method]) == 0


@pytest.mark.slow
def test_a_build_with_the_shipped_reader_gets_the_shipped_answerability_calibrator(real_build, capsys):
    from xqa.data.corpus import SHIPPED_ANSWERABILITY

    _, out, asked = real_build
    shipped = json.loads((SHIPPED_ANSWERABILITY / "config.json").read_text())
    reader = json.loads((out / "pipeline.json").read_text())["reader"]
    assert reader["answerability"] == shipped["calibrator"]
    assert reader["answerability_threshold"] == shipped["threshold"]
    assert reader["answerable"] == shipped["answerable"] and reader["not_found_threshold"] == shipped["not_found_threshold"]
    capsys.readouterr()
    assert main(["ask", asked[0]["question"], "--config", str(out / "pipeline.json"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert 0.0 <= record["confidence"] <= 1.0 and 0.0 <= record["answerable"] <= 1.0
    assert record["answered"] is (record["confidence"] >= shipped["threshold"])
    assert record["found"] is (record["answered"] or record["answerable"] >= shipped["not_found_threshold"])
    assert record["state"] == ("answered" if record["answered"] else "uncertain" if record["found"] else "not found")


@pytest.mark.slow
def test_answer_with_a_packed_reader_resumes_after_the_temporary_directory_was_emptied(real_build, tmp_path,
                                                                                       monkeypatch, capsys):
    """xqa answer --reader PACKED reads with the packed reader unpacked into the temporary
    directory; emptied between a killed run and its resume (a reboot), the folder is made again
    from the same files and the run resumes; packed again, the reader is another and it stops."""
    import os
    import shutil
    import tempfile

    from xqa.data.corpus import SHIPPED_READER

    _, out, asked = real_build
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    packed = Path(shutil.copytree(SHIPPED_READER, tmp_path / "packed"))
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": q["question"], "lang": q["lang"],
                                             "answers": q["answers"]}, ensure_ascii=False) + "\n"
                                 for i, q in enumerate(asked[:2])), encoding="utf-8")
    run = tmp_path / "run"
    args = ["answer", "--questions", str(questions), "--config", str(out / "pipeline.json"), "--out", str(run),
            "--reader", str(packed)]
    assert main(args) == 0
    first = (run / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(first) == 2
    (run / "records.jsonl").write_text(first[0] + "\n", encoding="utf-8")   # as if killed after one question
    made = list((tmp_path / "tmp").glob("xqa-readers-*/*"))
    assert len(made) == 1
    shutil.rmtree(made[0].parent)                                            # the temporary directory emptied
    capsys.readouterr()
    assert main(args) == 0
    assert "resuming: 1 of 2" in capsys.readouterr().out
    assert list((tmp_path / "tmp").glob("xqa-readers-*/*")) == made          # made again, where it was
    assert (run / "records.jsonl").read_text(encoding="utf-8").splitlines()[1] == first[1]
    (run / "records.jsonl").write_text(first[0] + "\n", encoding="utf-8")
    os.utime(packed / "config.json", ns=(1, 1))                              # packed again
    assert main(args) == 1
    assert f"{run} holds answers of a pipeline whose reader.model was written again since" in capsys.readouterr().err


@pytest.mark.slow
def test_a_build_reads_and_searches_in_int8_where_the_check_passed_and_int8_agrees_with_fp32(real_build):
    """The encoder's and the reader's int8 runtimes were built, checked and chosen on this CPU;
    the reader's answers to the German questions are the ones fp32 gives."""
    from reader.span.inference import RUNTIME_RECORD, SpanReader
    from xqa.encoders import runtime
    from xqa.encoders.info import read_info
    from xqa.records import Context, Question

    _, out, asked = real_build
    enc = read_info(out / "encoder").runtime
    assert enc["int8"]["passed"] and enc["int8"]["cosine_mean"] >= 0.99
    rec = json.loads((out / "reader" / RUNTIME_RECORD).read_text())
    assert rec["int8"]["passed"] and rec["measured"]["int8"]["span_agreement"] >= 0.8
    # the smoothing's measurements of the shipped encoder and reader came with the repository
    assert enc["int8"]["smoothing_statistics"] == rec["int8"]["smoothing_statistics"] == "shipped"
    dense = json.loads((out / "dense" / "config.json").read_text())
    assert dense["precisions"] == [runtime.recorded_choice(enc)]
    passages = {json.loads(line)["id"]: json.loads(line) for line in open(out / "passages.jsonl", encoding="utf-8")}
    qs = [Question(q["id"], q["question"], q["lang"]) for q in asked]
    ctxs = [[Context(p["id"], p["title"], p["text"], p["lang"], 1.0, "gold")
             for p in (passages[q["positive_ids"][0]],)] for q in asked]
    reader = SpanReader.load(out / "reader")
    reader.settings.precision = "int8"
    int8 = [o.text for o in reader.read(qs, ctxs)]
    # on a CPU a batch holds one question's rows (int8 quantises activations with one scale per
    # batch, bf16 and fp32 round by the batch's shape): a question read beside others is read as alone
    assert len(qs) > 1
    for precision in ("int8", "bf16", "fp32"):
        reader.settings.precision = precision
        assert ([o.to_dict() for o in reader.read(qs, ctxs, batch_size=16)]
                == [reader.read([q], [c])[0].to_dict() for q, c in zip(qs, ctxs)]), precision
    reader.settings.precision = "fp32"
    fp32 = [o.text for o in reader.read(qs, ctxs)]
    same = sum(a == b for a, b in zip(int8, fp32))
    assert same >= len(qs) - 1, list(zip(int8, fp32))
    # a reader that reads in int8 loads only its heads: the runtime computes the hidden states
    lean = SpanReader.load(out / "reader", precision="int8")
    assert not lean.model_loaded
    assert [o.text for o in lean.read(qs, ctxs)] == int8 and not lean.model_loaded
    lean.settings.precision = "fp32"   # anything else loads the encoder's weights when first needed
    assert [o.text for o in lean.read(qs, ctxs)] == fp32 and lean.model_loaded


@pytest.mark.slow
def test_a_second_build_skips_every_stage_and_another_recipe_rewrites_only_the_config(real_build, capsys):
    src, out, _ = real_build
    same = ["build", "--passages", str(src), "--out", str(out), "--lexical-steps", "4", "--k", "6",
            "--n-passages", "3"]
    capsys.readouterr()
    assert main(same) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert lines and all(line.endswith((": built", ": skipped (no --dev: the recipe's weights are kept)"))
                         for line in lines), lines
    try:
        assert main([*same[:-4], "--k", "7", "--n-passages", "3"]) == 0
        printed = capsys.readouterr().out
        rebuilt = [line for line in printed.splitlines() if line.startswith("[") and "done in" in line]
        assert [line.split("] ")[1].split(":")[0] for line in rebuilt] == ["pipeline config"], rebuilt
        assert "written from another recipe" in printed
        assert json.loads((out / "pipeline.json").read_text())["retrieval"]["k"] == 7
    finally:
        assert main(same) == 0      # the session's build as the other tests expect it


@pytest.mark.slow
def test_optional_dhr_and_pieces_stages_build_and_their_methods_answer(real_build, capsys):
    import shutil

    src, out, asked = real_build
    same = ["build", "--passages", str(src), "--out", str(out), "--lexical-steps", "4", "--k", "6",
            "--n-passages", "3"]
    for stage in ("dhr", "pieces"):   # built by this test in a kept build ($XQA_TEST_REAL_BUILD) before
        shutil.rmtree(out / stage, ignore_errors=True)
    try:
        capsys.readouterr()
        assert main([*same, "--dhr-slices", "4096", "--pieces", "--method", "dhr"]) == 0
        printed = capsys.readouterr().out
        rebuilt = [line.split("] ")[1].split(":")[0] for line in printed.splitlines()
                   if line.startswith("[") and "done in" in line]
        assert rebuilt == ["DHR index (densified BM25 over e5 pieces + dense vectors)", "BM25 index over e5 pieces",
                           "pipeline config"], rebuilt
        cfg = json.loads((out / "pipeline.json").read_text())["retrieval"]
        assert (cfg["method"], cfg["dhr_index"], cfg["pieces_index"], cfg["lam"]) == ("dhr", "dhr", "pieces", 500.0)
        assert json.loads((out / "dhr" / "config.json").read_text())["passages"] == 12
        for method in ("dhr", "dlr", "pieces"):
            capsys.readouterr()
            assert main(["ask", asked[0]["question"], "--config", str(out / "pipeline.json"), "--method", method,
                         "--json"]) == 0
            record = json.loads(capsys.readouterr().out)
            assert record["evidence"], method
        assert main(["build", "--passages", str(src), "--out", str(out), "--method", "bm25-aug"]) == 1
        assert "--bm25-aug MODEL" in capsys.readouterr().err
    finally:
        assert main(same) == 0      # the session's build as the other tests expect it


def test_a_corrupt_passage_file_fails_with_file_and_line_and_leaves_nothing(tmp_path, capsys):
    rows, _ = _dozen()
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in rows[:5]]
    lines.insert(3, '{"id": "x", "title": "t", "text": ')
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["build", "--passages", str(bad), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:4" in err
    assert not out.exists()   # not even the folder: a build that wrote nothing leaves nothing
    kept = tmp_path / "kept"   # a folder that was there before stays
    kept.mkdir()
    assert main(["build", "--passages", str(bad), "--out", str(kept)]) == 1
    assert kept.is_dir()


@pytest.mark.slow
def test_passages_from_another_collection_are_refused(real_build, tmp_path, capsys):
    _, out, _ = real_build
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "a", "title": "", "text": "x", "lang": "en"}) + "\n")
    assert main(["build", "--passages", str(other), "--out", str(out)]) == 1
    assert "another passage collection" in capsys.readouterr().err


def test_retrieval_tuned_on_other_dev_questions_is_tuned_again(tmp_path, capsys):
    """tuned/retrieval.done names the --dev file it was tuned on; a rerun with another --dev tunes
    both stages again instead of keeping weights chosen on the first questions."""
    from xqa.recipes.corpus import CorpusBuild

    out, first, second = tmp_path / "out", tmp_path / "dev1.jsonl", tmp_path / "dev2.jsonl"
    (out / "tuned").mkdir(parents=True)
    (out / "tuned" / "retrieval.done").write_text(f"α tuned on {first.resolve()}\n")
    (out / "tuned" / "fusion.json").write_text("{}")
    stages = {s.name.split(" ")[1]: s for s in CorpusBuild(tmp_path / "p.jsonl", out, dev=first).stages()
              if s.name.startswith("tune ")}
    assert stages["α"].done() and stages["β,"].done()
    stages = {s.name.split(" ")[1]: s for s in CorpusBuild(tmp_path / "p.jsonl", out, dev=second).stages()
              if s.name.startswith("tune ")}
    assert not stages["α"].done() and not stages["β,"].done() and not (out / "tuned").exists()
    assert f"tuned on {first.resolve()}; tuning again on {second}" in capsys.readouterr().out
    assert CorpusBuild(tmp_path / "p.jsonl", out).stages()[-1].done()   # no --dev: nothing to tune
    assert CorpusBuild(tmp_path / "p.jsonl", out).stages()[-1].skipped.startswith("skipped (no --dev")


def test_a_collection_changed_since_its_build_is_said_so_not_called_another(tmp_path):
    from xqa.errors import XqaError
    from xqa.recipes.corpus import CorpusBuild

    src = tmp_path / "mine.jsonl"
    src.write_text(json.dumps({"id": "a", "title": "", "text": "x", "lang": "en"}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "passages.jsonl").write_text("")
    (out / "source.json").write_text(json.dumps({"path": str(src.resolve()), "sha256": "0" * 64}))
    with pytest.raises(XqaError, match=rf"was built from {src.resolve()} as it was then; build {src} into another"):
        CorpusBuild(src, out).stages()[0].done()


def test_passages_given_their_language_by_another_lang_are_refused(tmp_path):
    from xqa.errors import XqaError
    from xqa.recipes.corpus import CorpusBuild

    src = tmp_path / "mine.jsonl"
    src.write_text(json.dumps({"id": "a", "title": "", "text": "x"}) + "\n")   # no 'lang': --lang gives it
    out = tmp_path / "out"
    CorpusBuild(src, out, lang="de").copy_passages()
    assert CorpusBuild(src, out, lang="de").stages()[0].done()
    with pytest.raises(XqaError, match="was built with --lang de, not fr"):
        CorpusBuild(src, out, lang="fr").stages()[0].done()


def test_an_id_in_two_files_of_a_collection_folder_is_named_by_file_and_line(tmp_path):
    from xqa.errors import InputError
    from xqa.recipes.corpus import CorpusBuild

    coll = tmp_path / "coll"
    coll.mkdir()
    row = {"id": "p2", "title": "", "text": "c", "lang": "en"}
    (coll / "a.jsonl").write_text(json.dumps({**row, "id": "p1"}) + "\n" + json.dumps(row) + "\n")
    (coll / "b.jsonl").write_text("\n" + json.dumps({**row, "id": "p9"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(InputError, match=rf"{coll / 'b.jsonl'}:3: passage id 'p2' is also in {coll / 'a.jsonl'}"):
        CorpusBuild(coll, tmp_path / "out").copy_passages()


@pytest.mark.slow
def test_a_build_with_a_trained_retriever_encodes_its_dense_index_and_spar_with_it(converted_e5, tmp_path, capsys):
    """--dense-model: the retriever of xqa train retriever is copied into the build and encodes the
    dense index (and SPAR's dense half); a rerun skips it, and one without the flag encodes with
    the build's encoder again."""
    from retriever.dense.encode import resolve_model_dir
    from test_kit import _write_data

    _write_data(tmp_path / "data")
    assert main(["train", "retriever", "--init", str(converted_e5), "--freeze-embeddings", "--train",
                 str(tmp_path / "data" / "train.jsonl"), "--passages", str(tmp_path / "data" / "passages.jsonl"),
                 "--batch-size", "2", "--max-steps", "1", "--out", str(tmp_path / "ft")]) == 0
    rows, asked = _dozen()
    src = tmp_path / "passages.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "build"
    args = ["build", "--passages", str(src), "--out", str(out), "--lexical-steps", "2", "--k", "6",
            "--n-passages", "3"]
    assert main([*args, "--dense-model", str(tmp_path / "data")]) == 1
    assert "not a dense retriever (xqa train retriever's OUT" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--dense-model", str(tmp_path / "ft")]) == 0
    capsys.readouterr()

    def encoded_by(index: str) -> Path:
        cfg = json.loads((out / index / "config.json").read_text())
        return resolve_model_dir(out / index, cfg["model" if index == "dense" else "dense_model"]).resolve()

    assert json.loads((out / "dense-model" / "config.json").read_text())["kind"] == "bi_encoder"
    assert encoded_by("dense") == encoded_by("spar") == (out / "dense-model").resolve()
    assert json.loads((out / "build.json").read_text())["placed"]["dense-model"]["path"] == str(tmp_path / "ft")
    assert main(["ask", asked[0]["question"], "--config", str(out / "pipeline.json"), "--method", "dense",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["evidence"]
    assert main(["info", "--config", str(out / "pipeline.json")]) == 0
    assert f"encoder {out / 'dense-model'}: 12 layers × 384\n           placed from {tmp_path / 'ft'}" \
        in capsys.readouterr().out
    assert main([*args, "--dense-model", str(tmp_path / "ft")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert "dense model (--dense-model): built" in "\n".join(lines)
    assert all(line.endswith((": built", ": skipped (no --dev: the recipe's weights are kept)")) for line in lines)
    assert main(args) == 0   # without it: the build's encoder again, and the copy goes
    printed = capsys.readouterr().out
    assert "encoded by another model than" in printed and not (out / "dense-model").exists()
    assert encoded_by("dense") == encoded_by("spar") == (out / "encoder").resolve()
    assert "dense-model" not in json.loads((out / "build.json").read_text())["placed"]
    # other recipe settings of a part: that part (and what is built from it) made again, not kept
    other = [a if a != "2" else "3" for a in args] + ["--dense-max-length", "32"]
    assert main(other) == 0
    printed = capsys.readouterr().out
    assert "encoded with other settings (dense_max_length 256 → 32)" in printed
    assert "trained with other settings (lexical_steps 2 → 3)" in printed
    assert json.loads((out / "dense" / "encoding.json").read_text())["max_length"] == 32
    assert json.loads((out / "lexical" / "checkpoint" / "trainer_state.json").read_text())["step"] == 3
    assert main(other) == 0   # the same again: nothing made anew
    assert "other settings" not in capsys.readouterr().out


def test_documents_changed_since_their_build_are_named_file_by_file(tmp_path):
    """A build cut from documents refuses other documents or options, and says which files
    changed, came or went and which option differs, instead of only that something did."""
    from xqa.errors import XqaError
    from xqa.recipes.corpus import CorpusBuild

    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (docs / name).write_text(f"The paragraph of {name} says something about the world of {name}.\n\n" * 3)
    out = tmp_path / "out"
    options = {"split": "mia", "max_tokens": 200, "overlap": 0, "strict": False}
    build = CorpusBuild(docs, out, documents=options, lang="en")
    out.mkdir()
    build.split_documents()
    assert CorpusBuild(docs, out, documents=options, lang="en").stages()[1].done()
    (docs / "a.txt").write_text("Another text altogether, long enough to be a passage of its own.\n")
    (docs / "sub" / "c.txt").unlink()
    (docs / "d.txt").write_text("A new document, long enough to be a passage of its own as well.\n")
    with pytest.raises(XqaError, match=rf"was built from {docs.resolve()} as it was then \(changed: a.txt; "
                                       rf"new: d.txt; gone: sub/c.txt\); build"):
        CorpusBuild(docs, out, documents=options, lang="en").stages()[1].done()
    build = CorpusBuild(docs, out, documents=options, lang="en")
    build.split_documents()
    with pytest.raises(XqaError, match=r"as it was then \(--overlap 0 then, 20 now; --lang en then, de now\)"):
        CorpusBuild(docs, out, documents={**options, "overlap": 20}, lang="de").stages()[1].done()
