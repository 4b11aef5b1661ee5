"""Answerability: tidy answer text, the calibrated probability, abstention in ask/answer/demo,
``xqa tune answerability`` and ``xqa eval --selective``."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from apps import render
from reader.answer_text import tidy_answer
from reader.answerability import (FEATURES, Calibrator, answer_features, fit_calibrator,
                                  threshold_for_precision)
from xqa.config import PipelineConfig
from xqa.errors import XqaError
from xqa.evaluation import selective
from xqa.records import Answer, Candidate, Context, Evidence

# ------------------------------------------------------------------ answer text


@pytest.mark.parametrize("raw, tidy", [
    ("ليبرالية،", "ليبرالية"),             # Arabic comma
    ("东京。", "东京"),                      # ideographic full stop
    ("「東京タワー」", "「東京タワー」"),       # balanced corner brackets stay
    ("東京タワー」", "東京タワー"),            # an unbalanced one goes
    ("हिंदी।", "हिंदी"),                       # Devanagari danda
    ("Москва,", "Москва"),
    ("«Don Quijote»", "«Don Quijote»"),
    ("«Don Quijote", "Don Quijote"),
    ("1918 (aged", "1918"),                # an opening bracket never closed, and its tail
    ("aged 70)", "aged 70"),
    ("57 SM-654 M), tengah", "57 SM-654 M"),   # a closing bracket inside: cut there, not taken out
    ("), tengah", "tengah"),
    ('He said "hi there', "He said"),
    ("(a) b)", "(a) b"),
    ("Paris (France)", "Paris (France)"),
    ("(1990", "1990"),
    ("  45%. ", "45%"),
    ("Washington, D.C.", "Washington, D.C."),
    ("Martin Luther King Jr.", "Martin Luther King Jr."),
    ("in Rome.", "in Rome"),
    ("-5 °C", "-5 °C"),
    ("—the end", "the end"),
    ('"Hello', "Hello"),
    ('"Hello"', '"Hello"'),
    ("Barack Obama,", "Barack Obama"),
    ("ต้มยำกุ้ง", "ต้มยำกุ้ง"),
    ("Sigrid Aune\n\nSigrid Aune", "Sigrid Aune"),   # a span across a blank line: its first paragraph
    ("|\n\nTomas Reed, 1874", "Tomas Reed, 1874"),
    ("line one\nline two", "line one\nline two"),   # one paragraph's line break stays
    ("...", "..."),                        # nothing but punctuation: kept as it was
    ("", ""),
])
def test_tidy_answer(raw, tidy):
    assert tidy_answer(raw) == tidy


def test_a_tidy_answer_is_always_a_piece_of_the_span_as_written():
    """Nothing is taken out of an answer's middle: it stays text the passage holds, which the
    page highlights and counts in the passages read."""
    import random

    rng = random.Random(0)
    alphabet = "ab1 ()[]«»「」\"'.,;:-—%"
    for _ in range(5000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert tidy_answer(raw) in raw, raw


def test_evidence_fusion_shows_tidy_answers():
    from reader.evidence import merge_duplicates

    merged = merge_duplicates(["ليبرالية،", "ليبرالية"], np.log([0.3, 0.2]), [1.0, 0.5])
    assert [c.text for c in merged] == ["ليبرالية"]      # one answer, its punctuation gone
    assert merged[0].score == pytest.approx(0.5)


# ------------------------------------------------------------------ features and the calibrator


def _ctx(pid, text, lang="en", score=1.0):
    return Context(id=pid, title="", text=text, lang=lang, score=score, source="hybrid")


def _answer(text="Helsinki", p=0.7, p2=0.2, lang="en", texts=("Helsinki is the capital.", "Turku is old."),
            scores=(0.9, 0.4), weights=(0.8, 0.2)):
    ev = tuple(Evidence(_ctx(f"p{i}", t, score=s), w) for i, (t, s, w) in enumerate(zip(texts, scores, weights)))
    cands = (Candidate(text, p, 7.5, lang=lang), Candidate("Turku", p2, 3.0, lang="en"))
    return Answer("q", text, p, cands, ev)


def test_answer_features_read_the_answer_and_its_evidence():
    f = answer_features(_answer(), "en", reader_relevance=[2.0, -1.0])
    assert set(f) == set(FEATURES)
    assert f["log_p"] == pytest.approx(math.log(0.7))
    assert f["margin"] == pytest.approx(0.5)
    assert f["log_overlap"] == pytest.approx(math.log(0.7))      # "Turku" neither holds nor is in it
    nested = Answer("q", "Helsinki", 0.5, (Candidate("Helsinki", 0.5, 1.0), Candidate("Helsinki city", 0.3, 0.5),
                                           Candidate("Oulu", 0.2, 0.1)), _answer().evidence)
    assert answer_features(nested, "en")["log_overlap"] == pytest.approx(math.log(0.8))
    assert f["span_score"] == 7.5
    assert (f["relevance_max"], f["relevance_gap"]) == (2.0, 3.0)
    assert f["passage_weight"] == 0.8
    assert (f["retrieval_top"], f["retrieval_gap"]) == pytest.approx((0.9, 0.5))
    assert f["agreement"] == 0.5                       # in one of the two passages read
    assert f["same_language"] == 1.0
    assert answer_features(_answer(lang="fi"), "en")["same_language"] == 0.0
    both = _answer(texts=("Helsinki is the capital.", "Helsinki, Finland."))
    assert answer_features(both, "en")["agreement"] == 1.0
    empty = answer_features(Answer("q", "", 0.0), "en")
    assert all(math.isfinite(v) for v in empty.values())


def _calibrator(**coef):
    feats = list(coef)
    return Calibrator(feats, [0.0] * len(feats), [1.0] * len(feats), list(coef.values()), -1.0)


def test_calibrated_probability_is_a_probability_and_monotonic_in_its_features():
    cal = _calibrator(log_p=2.0, agreement=1.5, retrieval_gap=0.5)
    grid = [{"log_p": lp, "agreement": a, "retrieval_gap": 0.1} for lp in (-50, -3, -1, 0) for a in (0, 0.5, 1)]
    p = cal.probabilities(grid)
    assert ((p >= 0) & (p <= 1)).all()
    assert cal.probability({"log_p": -1e6, "agreement": 0}) == pytest.approx(0.0, abs=1e-12)
    assert cal.probability({"log_p": 1e6, "agreement": 0}) == pytest.approx(1.0)
    lps = [cal.probability({"log_p": lp, "agreement": 0.5}) for lp in np.linspace(-6, 0, 13)]
    assert all(b > a for a, b in zip(lps, lps[1:]))       # higher fused probability, higher P(right)
    ags = [cal.probability({"log_p": -1, "agreement": a}) for a in (0, 0.25, 0.5, 1)]
    assert all(b > a for a, b in zip(ags, ags[1:]))       # more passages agreeing, higher P(right)
    assert Calibrator.from_dict(json.loads(json.dumps(cal.to_dict()))).probabilities(grid) == pytest.approx(p)


def test_a_calibrator_with_bad_fields_is_refused():
    with pytest.raises(ValueError, match="unknown features"):
        Calibrator(["shoe_size"], [0.0], [1.0], [1.0], 0.0)
    with pytest.raises(ValueError, match="2 features but 1 means"):
        Calibrator(["log_p", "margin"], [0.0], [1.0, 1.0], [1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="missing key 'intercept'"):
        Calibrator.from_dict({"features": ["log_p"], "mean": [0], "scale": [1], "coef": [1]})


def test_fit_learns_which_way_a_feature_points_and_is_calibrated_on_what_it_saw():
    rng = np.random.default_rng(0)
    n = 2000
    rows = [{f: float(rng.normal()) for f in FEATURES} for _ in range(n)]
    truth = np.array([1 / (1 + math.exp(-(2 * r["log_p"] - 1.5 * r["answer_length"]))) for r in rows])
    y = rng.random(n) < truth
    cal = fit_calibrator(rows, y)
    w = dict(zip(cal.features, cal.coef))
    assert w["log_p"] > 1.0 and w["answer_length"] < -0.7
    assert max(abs(w[f]) for f in FEATURES if f not in ("log_p", "answer_length")) < 0.3
    p = cal.probabilities(rows)
    assert selective.ece(p, y) < 0.05
    with pytest.raises(ValueError, match="right and answers that are wrong"):
        fit_calibrator(rows[:10], [True] * 10)


def test_threshold_is_the_lowest_that_keeps_the_wanted_precision():
    p = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    right = [1, 1, 1, 0, 1, 0]
    assert threshold_for_precision(p, right, 0.75) == 0.5     # top 5: 4 of 5 right
    assert threshold_for_precision(p, right, 1.0) == 0.7
    assert threshold_for_precision(p, [0] * 6, 0.75) == 1.0   # never precise enough: answer nothing


# ------------------------------------------------------------------ selective figures


def test_selective_figures_by_hand():
    assert selective.auroc([0.9, 0.8], [0.1, 0.85]) == pytest.approx(0.75)
    assert selective.auroc([0.5], [0.5]) == pytest.approx(0.5)          # a tie counts half
    # order by score: right, wrong, right -> error rates 0, 1/2, 1/3
    assert selective.aurc([0.9, 0.5, 0.1], [1, 0, 1]) == pytest.approx((0 + 1 / 2 + 1 / 3) / 3)
    assert selective.accuracy_at([0.9, 0.5, 0.1, 0.05], [1, 0, 1, 1], 0.5) == pytest.approx(0.5)
    # two bins used: [0.9, 1.0): accuracy 1 at mean 0.95; [0.1, 0.2): accuracy 0 at mean 0.15
    assert selective.ece([0.95, 0.95, 0.15, 0.15], [1, 1, 0, 0]) == pytest.approx(0.5 * 0.05 + 0.5 * 0.15)
    assert selective.ece([1.0, 0.0], [1, 0]) == pytest.approx(0.0)       # edges fall in the end bins


def _records(path, rows, hidden=False):
    with open(path, "w", encoding="utf-8") as f:
        for i, (answer, gold, conf, score) in enumerate(rows):
            rec = {"id": f"{'h' if hidden else 'a'}{i}", "lang": "en", "question": "?", "answer": answer,
                   "gold": gold, "score": score, "confidence": conf, "answered": conf >= 0.5,
                   "features": {f: 0.0 for f in FEATURES} | {"log_p": math.log(max(score, 1e-6))}}
            if hidden:
                rec["gold_hidden"] = True
            f.write(json.dumps(rec) + "\n")
    return path


def test_eval_selective_on_a_small_file(tmp_path, capsys):
    from xqa.cli import main

    a = _records(tmp_path / "a.jsonl", [("Helsinki", ["Helsinki"], 0.9, 0.6), ("Turku", ["Helsinki"], 0.6, 0.7),
                                        ("the Kalevala", ["Kalevala"], 0.8, 0.5)])
    h = _records(tmp_path / "h.jsonl", [("Oulu", ["Helsinki"], 0.2, 0.8), ("Kalevala", ["Kalevala"], 0.4, 0.3)],
                 hidden=True)
    out, png = tmp_path / "sel.json", tmp_path / "plots" / "sel.png"
    assert main(["eval", "--selective", str(a), str(h), "--plot", str(png), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "answerable 3 (66.7% right), made unanswerable 2 (50.0% right)" in text
    # strict JSON (an empty reliability bin's mean is null, not NaN), as other readers need it
    fig = json.loads(out.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in {out}"))["selective"]
    cal, fused = fig["calibrated"], fig["fused probability"]
    assert cal["auroc"] == pytest.approx(1.0) and fused["auroc"] == pytest.approx(3 / 6)
    # calibrated order: 0.9 right, 0.8 right, 0.6 wrong, 0.4 right, 0.2 wrong
    assert cal["aurc"] == pytest.approx((0 + 0 + 1 / 3 + 1 / 4 + 2 / 5) / 5)
    assert cal["shown"] == pytest.approx(3 / 5) and cal["shown_accuracy"] == pytest.approx(2 / 3)
    assert cal["answerable_shown"] == pytest.approx(1.0)
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_eval_selective_names_the_bad_line(tmp_path):
    from xqa.cli import main

    bad = tmp_path / "r.jsonl"
    bad.write_text('{"id": "a", "answer": "x", "gold": ["x"], "lang": "en"}\n{"id": "b", "answer": "y"}\n')
    with pytest.raises(XqaError, match=r"r\.jsonl:2: .*'gold'"):
        selective.read_records([bad])
    assert main(["eval", "--selective", str(tmp_path / "missing")]) != 0
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "a", "answer": "x", "gold": ["x"], "lang": "en"}\n')
    with pytest.raises(XqaError, match=r"plain\.jsonl:1: answer record without 'features'"):
        selective.rescore(selective.read_records([plain]), _calibrator(log_p=1.0), 0.5)
    # what would count answers twice, or is no records file, is said (an empty file was an IndexError)
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "predictions.json").write_text('{"a": "x"}')
    twice = tmp_path / "twice.jsonl"
    twice.write_text(plain.read_text() * 2)
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text(plain.read_text().replace("}", ', "gold_hidden": true}'))
    for paths, said in (([tmp_path / "empty.jsonl"], "empty.jsonl: holds no answer records"),
                        ([tmp_path / "predictions.json"], "predictions.json: a JSON file; answer records are"),
                        ([plain, plain], "plain.jsonl: given twice"),
                        ([twice], r"twice\.jsonl:2: question 'a' answered again \(first at .*twice\.jsonl:1\)")):
        with pytest.raises(XqaError, match=said):
            selective.read_records(paths)
    assert len(selective.read_records([plain, hidden])) == 2   # once answerable, once made unanswerable
    assert main(["eval", "--selective", str(tmp_path / "empty.jsonl")]) == 1


def test_eval_selective_warns_of_records_of_two_retrieval_methods(tmp_path, capsys):
    from xqa.cli import main

    for method in ("hybrid", "sparse"):
        (tmp_path / method).mkdir()
        _records(tmp_path / method / "records.jsonl", [("Helsinki", ["Helsinki"], 0.8, 0.9),
                                                       ("Turku", ["Helsinki"], 0.3, 0.4)])
        (tmp_path / method / "run.json").write_text(json.dumps(
            {"settings": {"pipeline": {"retrieval": {"method": method}}}}))
    (tmp_path / "sparse" / "records.jsonl").write_text(
        (tmp_path / "sparse" / "records.jsonl").read_text().replace('"id": "a', '"id": "s'))
    assert main(["eval", "--selective", str(tmp_path / "hybrid"), "--plot", str(tmp_path / "p.png")]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["eval", "--selective", str(tmp_path / "hybrid"), str(tmp_path / "sparse"),
                 "--plot", str(tmp_path / "p.png")]) == 0
    assert "the records were retrieved by different methods" in capsys.readouterr().err


def test_tune_answerability_fits_writes_and_updates_the_config(tmp_path, capsys):
    from xqa.cli import main

    rng = np.random.default_rng(1)
    rows = []
    for i in range(200):
        right = i % 2 == 0
        score = float(np.clip(rng.normal(0.7 if right else 0.3, 0.15), 0.01, 0.99))
        rows.append(("Helsinki" if right else "Turku", ["Helsinki"], 0.5, score))
    a = _records(tmp_path / "a.jsonl", rows[:100])
    h = _records(tmp_path / "h.jsonl", rows[100:], hidden=True)
    cfg = tmp_path / "pipeline.json"
    PipelineConfig().save(cfg)
    assert main(["tune", "answerability", "--records", str(a), str(h), "--out", str(tmp_path / "fit"),
                 "--config", str(cfg), "--write-config"]) == 0
    fit = json.loads((tmp_path / "fit" / "config.json").read_text())
    assert fit["kind"] == "answerability" and fit["train"]["shown_accuracy"] >= 0.75
    cal = Calibrator.from_dict(fit["calibrator"])
    assert dict(zip(cal.features, cal.coef))["log_p"] > 0
    loaded = PipelineConfig.load(cfg)
    assert loaded.reader.answerability == fit["calibrator"]
    assert loaded.reader.answerability_threshold == fit["threshold"]
    captured = capsys.readouterr()
    assert "threshold" in captured.out and "warning" not in captured.err   # 100 right, 100 wrong
    # a handful of answers: fitted, and said to rest on too few
    few = _records(tmp_path / "few.jsonl", rows[:6])
    assert main(["tune", "answerability", "--records", str(few), "--out", str(tmp_path / "few")]) == 0
    assert "warning: 3 right and 3 wrong answers are few to fit on" in capsys.readouterr().err
    # the records' features scored again with the fitted calibrator (the records say 0.5 for every answer)
    figures = tmp_path / "sel.json"
    assert main(["eval", "--selective", str(a), str(h), "--calibrator", str(tmp_path / "fit"),
                 "--plot", str(tmp_path / "sel.png"), "--json", str(figures)]) == 0
    scored = json.loads(figures.read_text())["selective"]
    again, fused = scored["calibrated"], scored["fused probability"]
    # P(right) rises with the fused probability alone here: the same order, calibrated
    assert again["aurc"] == pytest.approx(fused["aurc"]) and again["ece"] < 0.1
    assert again["shown_accuracy"] >= 0.75
    assert again["threshold"] is None and again["shown"] < 1.0
    assert selective.load_calibrator(cfg)[1] == fit["threshold"]       # a pipeline config serves too
    with pytest.raises(XqaError, match="no answerability calibrator"):
        selective.load_calibrator(tmp_path / "sel.json")


def test_tune_answerability_writes_into_the_reader_that_answered_the_records(tmp_path, capsys):
    from xqa.cli import main
    from xqa.config import ReaderConfig

    rows = [("Helsinki" if i % 2 == 0 else "Turku", ["Helsinki"], 0.5, 0.8 if i % 2 == 0 else 0.2)
            for i in range(60)]

    def answered_by(path, reader):
        _records(path, rows)
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**r, "reader": reader} if reader else r) + "\n" for r in lines))
        return path

    cfg = tmp_path / "pipeline.json"
    PipelineConfig(readers={"short": ReaderConfig(model="elsewhere")}).save(cfg)
    short = answered_by(tmp_path / "short.jsonl", "short")
    args = ["tune", "answerability", "--out", str(tmp_path / "fit"), "--config", str(cfg), "--write-config"]
    assert main([*args, "--records", str(short)]) == 0
    loaded = PipelineConfig.load(cfg)
    assert loaded.readers["short"].answerability is not None and loaded.reader.answerability is None
    assert "answerability.short" in loaded.tuned and "answerability" not in loaded.tuned
    assert json.loads((tmp_path / "fit" / "config.json").read_text())["reader"] == "short"
    assert "(readers.short.answerability, readers.short.answerability_threshold" in capsys.readouterr().out
    mine = answered_by(tmp_path / "mine.jsonl", "runs/mine")   # xqa answer --reader FOLDER
    assert main([*args, "--records", str(mine)]) == 1
    assert "answered with --reader runs/mine, which" in capsys.readouterr().err
    # an xqa answer folder's run.json says which folder --reader runs/mine was: it joins the readers
    answered = tmp_path / "answered"
    answered.mkdir()
    answered_by(answered / "records.jsonl", "runs/mine/best")
    (answered / "run.json").write_text(json.dumps({"settings": {"pipeline": {"retrieval": {"method": "sparse"},
                                                                        "readers": {"runs/mine/best": {
        "model": str(tmp_path / "runs" / "mine" / "best"), "n_passages": 3, "beta": 0.5}}}}}))
    assert main([*args, "--records", str(answered)]) == 0
    said = capsys.readouterr().out
    assert "(readers.mine.answerability" in said and "retrieved by sparse: it judges answers of that method" in said
    mine = PipelineConfig.load(cfg).readers["mine"]
    assert mine.model == str(tmp_path / "runs" / "mine" / "best") and mine.n_passages == 3 and mine.beta == 0.5
    assert mine.answerability is not None and PipelineConfig.load(cfg).reader.answerability is None
    assert mine.answerability["fitted_on"]["method"] == "sparse"
    # records of two retrieval methods: one calibrator per method
    dense = tmp_path / "dense"
    dense.mkdir()
    (dense / "records.jsonl").write_text((answered / "records.jsonl").read_text().replace('"id": "', '"id": "d-'))
    (dense / "run.json").write_text((answered / "run.json").read_text().replace('"sparse"', '"dense"'))
    assert main([*args, "--records", str(answered), str(dense)]) == 1
    assert "retrieved by different methods" in capsys.readouterr().err
    (tmp_path / "none.jsonl").write_text("")
    assert main([*args, "--records", str(tmp_path / "none.jsonl")]) == 1
    assert "none.jsonl: holds no answer records" in capsys.readouterr().err
    assert main([*args, "--records", str(short), str(answered_by(tmp_path / "plain.jsonl", None))]) == 1
    err = capsys.readouterr().err
    assert "answered by 2 readers (--reader short at" in err and "the config's reader at" in err
    assert PipelineConfig.load(cfg).reader.answerability is None   # neither refusal wrote anything
    # the default reader named (--reader default) is the config's reader, as records without a name are
    named = answered_by(tmp_path / "named.jsonl", PipelineConfig.load(cfg).reader_name())
    assert main([*args, "--records", str(named), str(tmp_path / "plain.jsonl")]) == 0
    written = PipelineConfig.load(cfg)
    assert written.reader.answerability is not None and "answerability" in written.tuned


def test_the_pipeline_config_checks_the_calibrator(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"reader": {"answerability": {"features": ["log_p"], "mean": [0], "scale": [0],
                                                             "coef": [1], "intercept": 0}}}))
    with pytest.raises(XqaError, match=r"reader\.answerability.*scale"):
        PipelineConfig.load(bad)
    bad.write_text(json.dumps({"reader": {"answerability_threshold": 1.5}}))
    with pytest.raises(XqaError, match="answerability_threshold"):
        PipelineConfig.load(bad)


# ------------------------------------------------------------------ what a user sees


def test_answer_html_abstains_below_the_threshold_and_shows_the_guess():
    from dataclasses import replace

    a = _answer()
    shown = render.answer_html(replace(a, confidence=0.82, answered=True), True, "en", 0.45)
    assert render.NO_ANSWER_TITLE not in shown
    assert 'id="xqa-answer-prob">0.82<' in shown and "probability that the answer is right" in shown
    low = render.answer_html(replace(a, text="<b>Turku</b>", confidence=0.12, answered=False, found=False),
                             True, "en", 0.45, 0.2)
    assert render.NO_ANSWER_TITLE in low and 'id="xqa-no-answer"' in low
    assert render.UNCERTAIN_TITLE not in low
    assert "Best guess: " in low and "&lt;b&gt;Turku&lt;/b&gt;" in low and "<b>Turku</b>" not in low
    assert 'id="xqa-answer-prob">0.12<' in low and "(P(right) 0.12 &lt; 0.20)" in low
    # with an answerability calibrator, the not-found threshold is P(answerable)'s: said as such
    held = render.answer_html(replace(a, confidence=0.12, answerable=0.3, answered=False, found=False),
                              True, "en", 0.45, 0.4)
    assert "(P(right) 0.12 &lt; 0.45 and P(answerable) 0.30 &lt; 0.40)" in held
    # between the two thresholds: the answer itself, marked uncertain, with its probability
    likely = render.answer_html(replace(a, confidence=0.41, answered=False, found=True), True, "en", 0.45, 0.2)
    assert render.UNCERTAIN_TITLE in likely and 'id="xqa-uncertain"' in likely
    assert render.NO_ANSWER_TITLE not in likely and "Best guess" not in likely
    assert 'id="xqa-answer-text" dir="auto">Helsinki<' in likely and 'id="xqa-answer-prob">0.41<' in likely
    assert "below 0.45 for a confident answer" in likely
    plain = render.answer_html(a, True, "en")          # no calibrator: the fused probability, as found
    assert render.NO_ANSWER_TITLE not in plain and 'id="xqa-answer-prob">0.700<' in plain


def test_xqa_ask_lines_tell_answered_uncertain_and_not_found_apart():
    from dataclasses import replace

    from xqa.records import ANSWERED, NOT_FOUND, UNCERTAIN
    from xqa.rendering import NO_ANSWER, UNCERTAIN as UNCERTAIN_LINE, answer_lines

    a = _answer()
    cases = {ANSWERED: replace(a, confidence=0.8, answered=True, found=True),
             UNCERTAIN: replace(a, confidence=0.41, answered=False, found=True),
             NOT_FOUND: replace(a, confidence=0.1, answered=False, found=False)}
    firsts = {}
    for state, ans in cases.items():
        assert ans.state == state and ans.to_dict()["state"] == state
        firsts[state] = answer_lines(ans, "What is the capital of Finland?", "en", "dense",
                                     threshold=0.55, not_found_threshold=0.2)[1]
    assert firsts[ANSWERED].startswith("answer: Helsinki")
    assert firsts[UNCERTAIN].startswith(f"answer ({UNCERTAIN_LINE}): Helsinki") and "< 0.55" in firsts[UNCERTAIN]
    assert firsts[NOT_FOUND] == f"answer: {NO_ANSWER} (P(right) 0.10 < 0.20)"
    held = answer_lines(replace(cases[NOT_FOUND], answerable=0.17), "What is the capital of Finland?", "en",
                        "dense", threshold=0.43, not_found_threshold=0.31)[1]
    assert held == f"answer: {NO_ANSWER} (P(right) 0.10 < 0.43 and P(answerable) 0.17 < 0.31)"
    # a span from a passage in another language is marked so; from one whose language is not known, not
    from xqa.rendering import foreign_lang

    de = replace(cases[ANSWERED], candidates=[replace(c, lang="de") for c in a.candidates])
    und = replace(cases[ANSWERED], candidates=[replace(c, lang="und") for c in a.candidates])
    assert foreign_lang(de, "en") == "de" and foreign_lang(und, "en") == "" and foreign_lang(de, "und") == ""
    assert "[de: as written in a passage in that language]" in answer_lines(de, "Capital?", "en", "dense")[1]
    assert "[und" not in answer_lines(und, "Capital?", "en", "dense")[1]
    # a question of a script no BM25 index is written in: dense retrieval alone searched, and said so
    alone = answer_lines(cases[ANSWERED], "Какая столица?", "und", "hybrid", unknown_lang=True, searched=[])
    assert "retrieval: hybrid, dense alone here" in alone[1]
    assert "retrieval: hybrid)" in answer_lines(cases[ANSWERED], "Capital?", "en", "hybrid")[1]
    # a span across a document's lines: the answer and n-best lines stay one line each
    lines = answer_lines(replace(cases[ANSWERED], text="Helsinki,\n\nthe capital",
                                 candidates=[replace(c, text="Helsinki,\n\nthe capital") for c in a.candidates]),
                         "What is the capital of Finland?", "en", "dense", threshold=0.55)
    assert lines[1].startswith("answer: Helsinki, the capital    (")
    assert next(x for x in lines if x.startswith("n-best: ")).startswith("n-best: Helsinki, the capital (")


def test_the_not_found_threshold_keeps_the_wanted_share_of_answerable_questions():
    scores = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.02, 0.03, 0.15]
    answerable = [True] * 10 + [False] * 3
    # 10 answerable: at most 1 below the threshold -> the second lowest answerable score
    assert selective.threshold_for_misses(scores, answerable, 0.1) == 0.1
    assert selective.threshold_for_misses(scores, answerable, 0.0) == 0.05
    assert selective.threshold_for_misses(scores, [False] * 13, 0.1) is None
    s = np.asarray(scores)
    shares = selective.state_shares(s >= 0.55, s >= 0.1, answerable)
    assert shares["answerable"] == {"answered": 0.4, "uncertain": pytest.approx(0.5), "not found": 0.1, "n": 10}
    assert shares["unanswerable"] == {"answered": 0.0, "uncertain": pytest.approx(1 / 3),
                                      "not found": pytest.approx(2 / 3), "n": 3}


def test_tune_answerability_fits_a_not_found_threshold_and_the_pipeline_uses_it(tmp_path, capsys):
    from xqa.cli import main

    rng = np.random.default_rng(2)
    rows, hidden = [], []
    for i in range(120):   # answerable: higher fused probabilities, about half right
        s = float(np.clip(rng.normal(0.65, 0.15), 0.01, 0.99))
        rows.append(("Helsinki" if rng.random() < s else "Turku", ["Helsinki"], 0.5, s))
    for i in range(120):   # made unanswerable: low ones, rarely right
        s = float(np.clip(rng.normal(0.25, 0.1), 0.01, 0.99))
        hidden.append(("Helsinki" if rng.random() < 0.05 else "Oulu", ["Helsinki"], 0.5, s))
    a, h = _records(tmp_path / "a.jsonl", rows), _records(tmp_path / "h.jsonl", hidden, hidden=True)
    cfg = tmp_path / "pipeline.json"
    PipelineConfig().save(cfg)
    assert main(["tune", "answerability", "--records", str(a), str(h), "--out", str(tmp_path / "fit"),
                 "--not-found-share", "0.1", "--config", str(cfg), "--write-config"]) == 0
    text = capsys.readouterr().out
    fit = json.loads((tmp_path / "fit" / "config.json").read_text())
    low, high = fit["not_found_threshold"], fit["threshold"]
    assert 0 < low < 1 and 0 < high <= 1   # low is a threshold on P(answerable), high on P(right)
    states = fit["not_found"]["states"]
    assert states["answerable"]["not found"] <= 0.1 and states["unanswerable"]["not found"] > 0.5
    assert all(abs(sum(v for k, v in s.items() if k != "n") - 1) < 1e-9 for s in states.values())
    assert set(fit["not_found"]["auroc"]) == {"calibrated", "answerable"} and fit["not_found"]["score"] == "answerable"
    assert Calibrator.from_dict(fit["answerable"]).features == list(FEATURES)
    assert "not-found threshold" in text and "AUROC" in text
    loaded = PipelineConfig.load(cfg)
    assert loaded.reader.not_found_threshold == low and loaded.reader.answerable == fit["answerable"]
    # the records scored again by the fitted calibrator: what the demo would say of each
    figures = tmp_path / "sel.json"
    assert main(["eval", "--selective", str(a), str(h), "--calibrator", str(tmp_path / "fit"),
                 "--plot", str(tmp_path / "sel.png"), "--json", str(figures)]) == 0
    said = json.loads(figures.read_text())["states"]
    assert said["answerable"]["not found"] == pytest.approx(states["answerable"]["not found"])
    assert said["unanswerable"]["not found"] == pytest.approx(states["unanswerable"]["not found"])
    assert "uncertain" in capsys.readouterr().out
    # on P(right) (no P(answerable) calibrator), a not-found threshold above the threshold is refused
    bad = json.loads(cfg.read_text())
    bad["reader"]["answerable"] = None
    bad["reader"]["not_found_threshold"] = min(high + 0.1, 1.0) if high < 1 else 1.1
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(XqaError, match="not_found_threshold"):
        PipelineConfig.load(tmp_path / "bad.json")
