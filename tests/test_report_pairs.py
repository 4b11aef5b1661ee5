"""``xqa report pairs``: R@k per (paragraph language, question language) pair, and its tables."""
from __future__ import annotations

import pytest

from xqa.tools.lib.pairs import markdown, pair_recall, summarise


def _questions():
    return [
        {"id": "1", "lang": "de", "positive_ids": ["d1"], "xling": {"en": {"positive_ids": ["e1"]}}},
        {"id": "2", "lang": "de", "positive_ids": ["d2"], "xling": {}},
        {"id": "3", "lang": "en", "positive_ids": ["e3"]},
        {"id": "4", "lang": "sw", "positive_ids": ["s4"], "crosslingual": True, "xling": {"en": {"positive_ids": ["e4"]}}},
    ]


def test_pair_recall_counts_each_pair_at_each_cutoff():
    ranked = [["x", "d1", "e1"], ["d2"], ["y", "z", "w", "e3"], ["e4"]]
    t = pair_recall(ranked, _questions(), [1, 3])
    assert t[("de", "de")] == {"n": 2, "R@1": 0.5, "R@3": 1.0}      # d2 first; d1 second
    assert t[("en", "de")] == {"n": 1, "R@1": 0.0, "R@3": 1.0}
    assert t[("en", "en")] == {"n": 1, "R@1": 0.0, "R@3": 0.0}      # e3 is fourth
    assert t[("en", "sw")] == {"n": 1, "R@1": 1.0, "R@3": 1.0}
    assert ("sw", "sw") not in t                                     # its paragraph is only in another language
    s = summarise(t, [1, 3])
    assert s["same R@1"] == pytest.approx(0.25) and s["cross R@3"] == pytest.approx(1.0)


def test_markdown_has_a_per_language_table_for_every_cutoff():
    qs = _questions()
    results = {"a": pair_recall([["d1"], ["d2"], ["e3"], []], qs, [1, 5]),
               "b": pair_recall([["e1"], [], [], []], qs, [1, 5])}
    summary = {m: summarise(t, [1, 5]) for m, t in results.items()}
    text = markdown(results, summary, [1, 5])
    assert "same-language R@1 per language" in text and "same-language R@5 per language" in text
    table = text.split("same-language R@5 per language")[1].split("\n\n")[1].splitlines()
    assert table[0] == "| language | n | a | b |"
    assert "| de | 2 | 1.000 | 0.000 |" in table and "| en | 1 | 1.000 | 0.000 |" in table
    assert not any(row.startswith("| sw ") for row in table)


def test_unknown_language_searches_every_question_as_und_in_the_indexes_of_its_script(
        tiny_pipeline, tmp_path, monkeypatch):
    """--unknown-language: each question reaches BM25 as 'und' and is searched in the indexes written
    in its script; the table still groups it by its real language."""
    import json

    from retriever.sparse.searcher import SparseRetriever
    from xqa.cli import main
    from xqa.langid.rules import dominant_script, language_scripts

    world = tiny_pipeline.parent / "world" / "test.jsonl"
    rows = [json.loads(line) for line in world.read_text(encoding="utf-8").splitlines()[:40]]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    asked = {}
    real = SparseRetriever._search_by_script

    def spy(self, texts, k):
        for lang, index in self._indexes.items():
            original = index.batch_search

            def record(texts_, k_, threads, lang_=None, _lang=lang, _original=original):
                for t in texts_:
                    asked.setdefault(t, set()).add(_lang)
                return _original(texts_, k_, threads, lang_)

            monkeypatch.setattr(index, "batch_search", record)
        return real(self, texts, k)

    monkeypatch.setattr(SparseRetriever, "_search_by_script", spy)
    out = tmp_path / "pairs.json"
    args = ["report", "pairs", "--config", str(tiny_pipeline), "--questions", str(qfile), "--methods", "sparse",
            "--ks", "1", "5", "--out", str(out)]
    assert main(args) == 0
    assert asked == {}  # in their own languages: no question searched as und
    assert main([*args, "--unknown-language"]) == 0
    assert set(asked) == {r["question"] for r in rows}
    languages = json.loads((tiny_pipeline.parent / "bm25" / "config.json").read_text())["languages"]
    for text, searched in asked.items():
        script = dominant_script(text)
        assert searched == {lang for lang in languages if script in language_scripts(lang)}, text
    table = json.loads(out.read_text())
    assert table["unknown_language"] is True
    assert {key.split("-")[1] for key in table["pairs"]["sparse"]} <= {r["lang"] for r in rows}


def test_a_file_that_holds_no_questions_is_named_by_file_and_line(tiny_pipeline, tmp_path, capsys):
    from xqa.cli import main

    passages = tiny_pipeline.parent / "world" / "passages.jsonl"
    assert main(["report", "pairs", "--config", str(tiny_pipeline), "--questions", str(passages),
                 "--out", str(tmp_path / "pairs.json")]) == 1
    assert f"{passages}:1: question record without 'question'" in capsys.readouterr().err
