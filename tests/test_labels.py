"""Answer labels: a span copied from a passage in another language answers in the question's
language, keeps the evidence of the span, and the world, the build and the scorers use them."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from reader.evidence import build_answer, fuse_evidence
from reader.tuning import evaluate, prepare
from xqa.errors import InputError, XqaError
from xqa.records import Context
from xqa.world.labels import AnswerLabels

ITEMS = [
    {"id": "city/tokyo", "labels": {"en": "Tokyo", "ja": "東京", "es": "Tokio"}},
    {"id": "country/argentina", "labels": {"en": "Argentina", "es": "Argentina", "ja": "アルゼンチン"}},
    {"id": "occupation/chemist", "labels": {"en": "chemist", "es": "químico", "ru": "химик"},
     "female": {"es": "química", "ru": "химичка"}},
    {"id": "a", "labels": {"en": "Mora", "ja": "モラ"}},     # two items named "Mora" in English:
    {"id": "b", "labels": {"en": "Mora", "ja": "モーラ"}},   # ambiguous into Japanese
]


def exact(pred, golds, lang):
    return (float(pred in golds), float(pred in golds))


def test_a_label_of_another_language_is_written_in_the_questions():
    labels = AnswerLabels(ITEMS)
    assert labels.shown("東京", "en") == "Tokyo"
    assert labels.shown("tokyo", "ja") == "東京"              # matched like answers: normalised
    assert labels.shown("Tokyo", "en") == "Tokyo"              # already the question's language
    assert labels.shown("Argentina", "es") == "Argentina"      # a label in both: left alone
    assert labels.shown("Osaka", "en") == "Osaka"              # no label: left alone
    assert labels.shown("東京", "ru") == "東京"                  # no Russian label: left alone
    assert labels.shown("Mora", "ja") == "Mora"                # two items, two Japanese labels: ambiguous
    assert labels.shown("モラ", "en") == "Mora"                  # both say "Mora" in English: not ambiguous
    assert labels.shown("химичка", "es") == "química"          # a feminine form stays feminine
    assert labels.shown("chemist", "es") == "químico"          # English has one form: the plain label
    assert labels.shown("química", "en") == "chemist"          # no English feminine form: the plain label
    assert labels.shown_all(["東京", "1998"], "en") == ["Tokyo", "1998"]
    assert labels.shown_all(["東京"], None) == ["東京"]


def test_a_bad_label_table_names_its_file_and_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(ITEMS[0]) + "\n" + json.dumps({"id": "x", "labels": {"en": ""}}) + "\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"labels.jsonl:2"):
        AnswerLabels.load(path)
    path.write_text(json.dumps({"id": "x", "labels": {"en": "X"}, "female": ["X"]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels.jsonl:1.*'female'"):
        AnswerLabels.load(path)
    path.write_text(json.dumps(ITEMS[0]) + "\n\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels.jsonl:3.*JSON object"):
        AnswerLabels.load(path)
    path.write_text("\n".join(json.dumps(i, ensure_ascii=False) for i in ITEMS) + "\n", encoding="utf-8")
    assert len(AnswerLabels.load(path)) == len(ITEMS)
    with pytest.raises(XqaError, match="no answer label table"):
        AnswerLabels.load(tmp_path / "missing.jsonl")


def test_a_translated_span_keeps_its_evidence_and_sums_with_the_same_answer_written_directly():
    ctxs = [Context(id="ja-1", title="X", text="Xは東京で生まれた。", lang="ja", score=10.0, source="bm25"),
            Context(id="ja-2", title="Y", text="Yは大阪で生まれた。", lang="ja", score=1.0, source="bm25")]
    cands = [("東京", -1.0), ("大阪", -0.9), ("Tokyo", -3.0)]
    texts = [t for t, _ in cands]
    shown = AnswerLabels(ITEMS).shown_all(texts, "en")
    assert shown == ["Tokyo", "大阪", "Tokyo"]
    plain = fuse_evidence(cands, [0.5, 0.5], [10.0, 1.0], ctxs, beta=0.0, gamma=1.0, miss=0.01)
    fused = fuse_evidence(cands, [0.5, 0.5], [10.0, 1.0], ctxs, beta=0.0, gamma=1.0, miss=0.01, shown=shown)
    by_text = {c.text: c for c in plain}
    # the same scores, only grouped and shown by the label: "Tokyo" = the span 東京 + the written Tokyo
    assert fused[0].text == "Tokyo" and fused[0].written == "東京"
    assert fused[0].score == pytest.approx(by_text["東京"].score + by_text["Tokyo"].score)
    assert fused[0].reader_score == pytest.approx(-1.0)       # the best member: the span
    assert [c.text for c in fused] == ["Tokyo", "大阪"] and fused[1].written == ""
    # the span matched its passage (the retriever's favourite), the written form matched none
    assert by_text["東京"].score > by_text["大阪"].score > by_text["Tokyo"].score
    with pytest.raises(ValueError, match="2 shown texts for 3 candidates"):
        fuse_evidence(cands, [0.5, 0.5], [10.0, 1.0], ctxs, shown=shown[:2])
    answer = build_answer("q", cands, [0.5, 0.5], ctxs, None, shown=shown)   # the reader alone
    assert answer.text == "Tokyo" and answer.candidates[0].written == "東京"


def test_tuning_evaluates_the_answer_in_the_questions_language():
    ctxs = [Context(id="ja-1", title="X", text="Xは東京で生まれた。", lang="ja", score=1.0, source="bm25")]
    out = SimpleNamespace(candidates=[("東京", -0.1), ("Osaka", -2.0)], relevance=np.array([1.0]))
    args = ([out], [ctxs], [["Tokyo"]], ["en"], exact)
    assert evaluate(prepare(*args), None) == (0.0, 0.0)
    assert evaluate(prepare(*args, labels=AnswerLabels(ITEMS)), None) == (1.0, 1.0)


def test_the_world_writes_its_label_table_and_rebuilds_a_world_without_one(tmp_path, capsys):
    from xqa.world import answer_labels, build_world, generate

    out = tmp_path / "w"
    build_world(out, size="small", seed=3)
    written = (out / "labels.jsonl").read_bytes()
    gen = generate("small", seed=3)
    rows = answer_labels(gen.world)
    assert [json.loads(line) for line in written.decode().splitlines()] == rows
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert "labels.jsonl" in config["files"]
    assert build_world(out, size="small", seed=3)["built"] is False        # complete: kept
    (out / "labels.jsonl").unlink()                                        # as an earlier xqa wrote worlds
    assert build_world(out, size="small", seed=3)["built"] is True         # stale: built again, and said so
    assert "without labels.jsonl (made by an earlier version of xqa): building it again" in capsys.readouterr().out
    assert (out / "labels.jsonl").read_bytes() == written
    labels = AnswerLabels.load(out / "labels.jsonl")
    # the gold answer of a cross-lingual question about an entity is what the table makes of the
    # entity's name in the language of one of its gold passages (occupations: see the next test)
    by_id = {p["id"]: p for p in gen.passages}
    cross = [q for q in gen.questions["test"] if q["crosslingual"] and not q["answers"][0].isdigit()
             and q["relation"] != "occupation"]
    assert cross
    for q in cross:
        gold_langs = {by_id[i]["lang"] for i in q["positive_ids"]}
        assert q["lang"] not in gold_langs
        row = next(r for r in rows if q["answers"][0] in (*r["labels"].values(), *r.get("female", {}).values()))
        other = {**row["labels"], **row.get("female", {})}
        assert any(labels.shown(other[lg], q["lang"]) == q["answers"][0] for lg in gold_langs if lg in other)


def test_the_build_names_the_label_table_and_tunes_fusion_with_it(tmp_path, monkeypatch):
    import xqa.recipes.world as world_recipe
    from xqa.recipes.world import LABELS, WorldBuild
    from xqa.world import build_world

    build = WorldBuild(tmp_path, profile="world")
    build_world(build.world, size="small", seed=0)
    build.write_config()
    assert json.loads(build.config_path.read_text())["reader"]["labels"] == LABELS
    stages = dict((name, done) for name, done, *_ in build.stages())
    assert stages["answer labels"]()
    calls = []
    monkeypatch.setattr(world_recipe, "call_distributed", lambda procs, function, arguments: calls.append(arguments))
    monkeypatch.setattr(world_recipe.WorldBuild, "_update_config", lambda self, **kw: None)
    (tmp_path / "fusion.json").write_text(json.dumps({"beta": 0, "gamma": 1, "miss": 0.1, "soft": False}))
    build.tune_fusion()
    (arguments,) = calls
    assert arguments["config"].labels == str(build.world / "labels.jsonl")


def test_training_copies_the_answers_name_from_a_passage_in_another_language(tmp_path, capsys):
    from xqa.evaluation.reading import load_examples
    from xqa.io import write_results
    from xqa.records import Question, RetrievalResult

    labels = AnswerLabels(ITEMS)
    assert labels.forms("tokyo") == ["Tokyo", "東京", "Tokio"]
    assert labels.forms("química") == ["chemist", "químico", "химик", "química", "химичка"]
    assert labels.forms("Mora") == [] and labels.forms("Osaka") == []     # several items / none

    def ctx(pid, lang, text):
        return Context(id=pid, title=pid, text=text, lang=lang, score=1.0, source="bm25")

    results = [
        # cross-lingual: asked in Spanish, stated in Japanese -> learns to copy 東京
        RetrievalResult(Question(id="a", question="¿Dónde nació X?", answers=("Tokio",), lang="es",
                                 meta={"positive_ids": ["ja-1"]}),
                        (ctx("ja-1", "ja", "Xは東京で生まれた。"), ctx("ja-2", "ja", "Yは大阪で生まれた。"))),
        # the answer itself is in a passage: kept
        RetrievalResult(Question(id="b", question="Where was Y born?", answers=("Tokyo",), lang="en",
                                 meta={"positive_ids": ["en-1"]}),
                        (ctx("en-1", "en", "Y was born in Tokyo, not in 東京."), ctx("ja-2", "ja", "Yは大阪"))),
        # no name of the answer in any passage: kept
        RetrievalResult(Question(id="c", question="¿Dónde nació Z?", answers=("Tokio",), lang="es",
                                 meta={"positive_ids": ["ja-3"]}),
                        (ctx("ja-3", "ja", "Zは大阪で生まれた。"),)),
    ]
    path = tmp_path / "train.jsonl"
    write_results(path, results)
    plain = load_examples(str(path), 2, need_answers=True, contexts="evidence")
    assert [e["answers"] for e in plain] == [["Tokio"], ["Tokyo"], ["Tokio"]]
    copied = load_examples(str(path), 2, need_answers=True, contexts="evidence", labels=labels)
    assert [e["answers"] for e in copied] == [["東京"], ["Tokyo"], ["Tokio"]]
    assert "1 of 3 questions train on their answer's name in a passage in another language" in capsys.readouterr().out
