"""Evaluation: official MIA EM/F1 per language rule, DPR has_answer, recall/MRR, t-test, report, CLI.

Every expected number below is worked out by hand in the comment next to it.
"""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import pytest

from xqa.errors import InputError, XqaError
from xqa.evaluation import (
    check_language,
    compare_systems,
    evaluate,
    has_answer,
    load_gold,
    load_predictions,
    load_retrieval_results,
    mia_score,
    mrr_at_k,
    normalize_answer,
    paired_t_test,
    recall_at_k,
    score_answer,
    score_retrieval,
    segment_answer,
    split_mia,
    token_f1,
    topk_accuracy,
)
from xqa.evaluation.report import write_report
from xqa.evaluation.tokenize import mecab_dictionary_version
from xqa.records import Question


def q(qid, lang, *answers):
    return Question(id=qid, question="?", lang=lang, answers=tuple(answers))


def approx(x):
    return pytest.approx(x, abs=1e-9)


# --------------------------------------------------------------------------- normalization


def test_normalize_removes_ascii_punctuation_only():
    # "." and "!" are ASCII punctuation; « » are not and stay.
    assert normalize_answer("«U.S.A.»!") == "«usa»"
    assert normalize_answer("东京。") == "东京。"  # the ideographic full stop is not ASCII


def test_normalize_deletes_counters_and_fixes_white_space():
    assert normalize_answer("1990年") == "1990"
    assert normalize_answer("30歳") == "30"
    assert normalize_answer("5人") == "5"
    assert normalize_answer("1990년") == "1990"
    assert normalize_answer("  Hello,\t World  ") == "hello world"


def test_no_article_removal():
    assert normalize_answer("The Beatles") == "the beatles"
    # pred tokens [beatles], gold [the, beatles]: P = 1, R = 1/2, F1 = 2/3; EM 0
    assert score_answer("Beatles", ["The Beatles"], "en") == (0.0, approx(2 / 3))


def test_f1_is_zero_without_shared_tokens_even_when_both_empty():
    assert token_f1("", "") == 0.0
    assert score_answer("!!", ["?"], "en") == (1.0, 0.0)  # both normalize to "": EM 1, F1 0


def test_max_over_gold_answers_per_metric():
    # gold 1 "a b c": P = 1, R = 2/3, F1 = 0.8; gold 2 "a x": P = R = 1/2, F1 = 0.5
    assert score_answer("a b", ["a b c", "a x"], "en") == (0.0, approx(0.8))
    assert score_answer("Beatles", ["The Beatles", "beatles"], "en") == (1.0, 1.0)


# --------------------------------------------------------------------------- language rules


def test_mecab_dictionary_is_pinned_to_unidic_lite():
    assert mecab_dictionary_version().startswith("unidic-lite==")
    assert segment_answer("東京都", "ja").split() == ["東京", "都"]


def test_japanese_is_segmented_with_mecab():
    # MeCab: 東京|都 vs 東京 -> P = 1, R = 1/2, F1 = 2/3; white-space split would give 0
    assert score_answer("東京", ["東京都"], "ja") == (0.0, approx(2 / 3))
    assert score_answer("東京", ["東京都"], "ko") == (0.0, 0.0)


def test_japanese_counter_removed_after_segmentation():
    # 1990|年 -> "1990 " -> "1990" == "1990"
    assert score_answer("1990", ["1990年"], "ja") == (1.0, 1.0)


def test_japanese_prediction_only_replacements():
    # prediction 東京、大阪 -> 東京,大阪 -> 東京 , 大阪 -> comma removed -> "東京 大阪"
    assert score_answer("東京、大阪", ["東京 大阪"], "ja") == (1.0, 1.0)
    # ・ becomes a space in the prediction only; the gold keeps it as a token:
    # gold [東京, ・, 大阪], pred [東京, 大阪] -> EM 0, P = 1, R = 2/3, F1 = 0.8
    assert score_answer("東京・大阪", ["東京・大阪"], "ja") == (0.0, approx(0.8))


def test_chinese_uses_jieba_posseg_not_jieba_cut():
    import jieba

    # the two jieba segmenters disagree on this string; the official scripts use posseg
    assert list(jieba.cut("杭研大厦")) == ["杭研", "大厦"]
    assert segment_answer("杭研大厦", "zh_cn").split() == ["杭", "研", "大厦"]
    # posseg: gold [杭, 研], pred [杭, 研, 大厦]: P = 2/3, R = 1, F1 = 0.8
    # (jieba.cut would give [杭研] vs [杭研, 大厦]: F1 = 2/3)
    for lang in ("zh_cn", "zh_hk", "zh_tw"):
        assert score_answer("杭研大厦", ["杭研"], lang) == (0.0, approx(0.8))


def test_bare_zh_is_white_space_split_in_official_mode_only():
    # official: one token each, different -> 0; lang_aware: as zh_cn -> 0.8
    assert score_answer("杭研大厦", ["杭研"], "zh", mode="official") == (0.0, 0.0)
    assert score_answer("杭研大厦", ["杭研"], "zh", mode="lang_aware") == (0.0, approx(0.8))


def test_thai_newmm_drops_space_tokens():
    assert segment_answer("สวัสดีครับ ผม", "th") == "สวัสดี ครับ ผม"
    # [สวัสดี] vs [สวัสดี, ครับ]: P = 1, R = 1/2, F1 = 2/3
    assert score_answer("สวัสดี", ["สวัสดีครับ"], "th") == (0.0, approx(2 / 3))


def test_khmer_is_segmented():
    assert segment_answer("ខ្ញុំស្រឡាញ់ប្រទេសកម្ពុជា", "km").split() == [
        "ខ្ញុំ", "ស្រឡាញ់", "ប្រទេស", "កម្ពុជា"]
    # [ប្រទេស, កម្ពុជា] vs 4 tokens: P = 1, R = 1/2, F1 = 2/3
    assert score_answer("ប្រទេសកម្ពុជា", ["ខ្ញុំស្រឡាញ់ប្រទេសកម្ពុជា"], "km") == (0.0, approx(2 / 3))


def test_unknown_language_is_an_error():
    with pytest.raises(XqaError, match="unknown language code 'jp'"):
        check_language("jp")
    with pytest.raises(XqaError, match="'jp'"):
        evaluate([q("1", "jp", "x")], {"1": "x"})


# --------------------------------------------------------------------------- evaluate


def test_evaluate_skips_no_answer_scores_missing_as_zero_and_macro_averages():
    gold = [
        q("e1", "en", "Paris"),
        q("e2", "en", "London"),  # no prediction -> 0, counted
        q("e3", "en", "No Answer"),  # skipped, not counted
        q("e4", "en", "Rome", "No Answer"),  # only a *first* "No Answer" skips
        q("j1", "ja", "1990年"),
        q("t1", "te"),  # no gold answers at all: skipped
    ]
    preds = {"e1": "paris", "e3": "whatever", "e4": "Rome", "j1": "1990"}
    s = evaluate(gold, preds)
    assert s.per_language["en"].n == 3 and s.per_language["en"].n_missing == 1
    assert s.per_language["en"].em == approx(200 / 3)  # 2 of 3
    assert s.per_language["ja"].em == 100.0
    assert s.macro_em == approx((200 / 3 + 100) / 2)  # macro, not the micro 3/4
    assert (s.n, s.n_no_answer, s.n_no_gold) == (4, 1, 1)
    assert "te" not in s.per_language
    assert [x.id for x in s.questions if not x.answered] == ["e2"]


def test_evaluate_says_what_it_takes_where_given_something_else(tmp_path):
    """A list of answers, a path or a dict of records would score every question as missing."""
    from xqa.records import Answer

    gold = [q("e1", "en", "Paris")]
    with pytest.raises(XqaError, match=r"not a list \(answers from Pipeline.answer: \{a.question_id: a.text"):
        evaluate(gold, [Answer(question_id="e1", text="Paris", score=1.0)])
    with pytest.raises(XqaError, match=r"predictions: .* not a path; read the file with .*load_predictions"):
        evaluate(gold, str(tmp_path / "predictions.json"))
    with pytest.raises(XqaError, match=r"gold: the questions, not a path; read them with xqa.io.read_questions"):
        evaluate(tmp_path / "q.jsonl", {"e1": "Paris"})
    with pytest.raises(XqaError, match=r"gold: Question records .*found a dict"):
        evaluate([{"id": "e1"}], {"e1": "Paris"})
    assert evaluate(gold, {"e1": "Paris"}).macro_em == 100.0


def test_mkqa_predictions_found_by_bare_id():
    gold = [q("123_ja", "ja", "東京"), q("123_zh_cn", "zh_cn", "北京")]
    s = evaluate(gold, {"123": "東京"})
    assert s.per_language["ja"].em == 100.0
    assert s.per_language["zh_cn"].em == 0.0  # the bare id's answer "東京" vs gold "北京"


def test_empty_gold_gives_empty_valid_scores():
    s = evaluate([], {"1": "x"})
    assert (s.n, s.macro_em, s.macro_f1, s.per_language) == (0, 0.0, 0.0, {})
    json.dumps(s.to_dict())


def test_mia_score_is_mean_of_the_two_macro_averages():
    gold = [q("11", "ja", "a"), q("12", "ko", "b"), q("5_ja", "ja", "c"), q("6_km", "km", "d")]
    xor_q, mkqa_q = split_mia(gold)
    assert [x.id for x in xor_q] == ["11", "12"] and [x.id for x in mkqa_q] == ["5_ja", "6_km"]
    preds = {"11": "a", "12": "x", "5": "c", "6": "d"}
    xor, mkqa = evaluate(xor_q, preds), evaluate(mkqa_q, preds)
    assert xor.macro_em == 50.0 and mkqa.macro_em == 100.0
    assert mia_score(xor, mkqa)["em"] == 75.0


# --------------------------------------------------------------------------- input files


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_predictions_layouts(tmp_path):
    folder = tmp_path / "preds"
    write(folder / "ja.json", json.dumps({"1_ja": "東京"}))
    write(folder / "en.jsonl", json.dumps({"id": "2", "answer": "Paris", "score": 0.9}) + "\n")
    write(tmp_path / "sub.json", json.dumps({"xor-tydi": {"3": "x"}, "mkqa-ar": {"4_ar": "y"}}))
    preds = load_predictions([folder, tmp_path / "sub.json"])
    assert dict(preds) == {"1_ja": "東京", "2": "Paris", "3": "x", "4_ar": "y"}


def test_an_answer_folder_stands_for_its_predictions_json(tmp_path):
    run = tmp_path / "run"
    (run / "predictions").mkdir(parents=True)
    write(run / "records.jsonl", json.dumps({"id": "q1", "answer": "a", "candidates": []}) + "\n")
    write(run / "run.json", json.dumps({"settings": {"pipeline": {"k": 5}}}))
    write(run / "predictions.json", json.dumps({"q1": "a", "q2": "b"}))
    write(run / "predictions" / "en.json", json.dumps({"q1": "a", "q2": "b"}))
    assert dict(load_predictions([run])) == {"q1": "a", "q2": "b"}
    assert dict(load_predictions([run / "predictions"])) == {"q1": "a", "q2": "b"}


def test_ambiguous_bare_ids_across_files_are_an_error(tmp_path):
    a = write(tmp_path / "ja.json", json.dumps({"7": "東京"}))
    b = write(tmp_path / "ar.json", json.dumps({"7": "طوكيو"}))
    preds = load_predictions([a, b])
    with pytest.raises(XqaError, match="different answers"):
        evaluate([q("7_ja", "ja", "東京")], preds)


def test_gzipped_jsonl_predictions_and_retrieval_results_are_read_as_jsonl(tmp_path):
    import gzip

    lines = '{"id": "q1", "answer": "Paris"}\n{"id": "q2", "answer": "Rome"}\n'
    packed = tmp_path / "preds.jsonl.gz"
    packed.write_bytes(gzip.compress(lines.encode("utf-8")))
    assert dict(load_predictions([packed])) == dict(load_predictions([write(tmp_path / "preds.jsonl", lines)])) \
        == {"q1": "Paris", "q2": "Rome"}
    record = {"id": "q1", "question": "Where?", "answers": ["Paris"], "lang": "en",
              "ctxs": [{"id": "p1", "title": "t", "text": "Paris is", "score": 1.0, "lang": "en"}]}
    runs = tmp_path / "run.jsonl.gz"
    runs.write_bytes(gzip.compress((json.dumps(record) + "\n").encode("utf-8")))
    assert [r["id"] for r in load_retrieval_results(runs)] == ["q1"]


def test_malformed_predictions_name_the_file_and_line(tmp_path):
    bad = write(tmp_path / "p.json", '{"1": "a",\n "2": }\n')
    with pytest.raises(InputError, match=r"p\.json:2"):
        load_predictions([bad])
    not_str = write(tmp_path / "n.json", json.dumps({"1": 5}))
    with pytest.raises(InputError, match="n.json.*expected a string"):
        load_predictions([not_str])
    bad_line = write(tmp_path / "p.jsonl", '{"id": "1", "answer": "a"}\n{"id": "2"}\n')
    with pytest.raises(InputError, match=r"p\.jsonl:2"):
        load_predictions([bad_line])


def test_empty_prediction_file_is_an_error_and_an_empty_object_predicts_nothing(tmp_path):
    with pytest.raises(InputError, match=r"p\.json: the file is empty"):
        load_predictions([write(tmp_path / "p.json", "")])
    assert len(load_predictions([write(tmp_path / "o.json", "{}")])) == 0


def test_gold_with_unknown_language_names_the_file(tmp_path):
    g = write(tmp_path / "g.jsonl", json.dumps({"id": "1", "question": "?", "answers": ["a"], "lang": "xx"}) + "\n")
    with pytest.raises(InputError, match=r"g\.jsonl.*'xx'"):
        load_gold([g])


def test_a_gold_folder_reads_dpr_question_files_and_gzipped_jsonl_beside_json(tmp_path):
    import gzip

    folder = tmp_path / "gold"
    folder.mkdir()
    write(folder / "nq-test.qa.csv", "who wrote hamlet?\t['Shakespeare']\n")
    with gzip.open(folder / "de.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"id": "q1", "question": "Wer?", "answers": ["er"], "lang": "de"}) + "\n")
    write(folder / "notes.txt", "not a gold file\n")
    gold = load_gold([folder])
    assert sorted((q.id, q.lang, tuple(q.answers)) for q in gold) == [
        ("nq-test.qa:1", "en", ("Shakespeare",)), ("q1", "de", ("er",))]
    (folder / "nq-test.qa.csv").unlink()
    (folder / "de.jsonl.gz").unlink()
    with pytest.raises(XqaError, match=r"gold: folder holds no gold files \(none ends in .json, .jsonl, .tsv, .csv"):
        load_gold([folder])


# --------------------------------------------------------------------------- retrieval


def test_dpr_has_answer_multi_token_contiguous():
    text = "I love New York City."
    assert has_answer(text, ["new york"])
    assert not has_answer(text, ["York New"])  # tokens present, not in this order
    assert not has_answer("Yorkshire pudding", ["York"])  # token, not substring
    assert has_answer("the U.S. army", ["U.S."])  # [u . s .] is a contiguous run
    assert has_answer("x", ["zzz", "x"])  # any of the answers
    assert has_answer("in Paris", "Paris")  # a single answer string is one answer, not characters


def test_dpr_has_answer_normalizes_nfd():
    composed = unicodedata.normalize("NFC", "café")
    decomposed = unicodedata.normalize("NFD", "café")
    assert composed != decomposed
    assert has_answer(f"Le {decomposed} noir", [composed])
    assert has_answer(f"Le {composed} noir", [decomposed])


def test_dpr_tokenizer_fails_on_unsegmented_scripts_lang_aware_does_not():
    assert not has_answer("東京都の人口", ["東京"], "ja", mode="dpr")
    assert has_answer("東京都の人口", ["東京"], "ja", mode="lang_aware")
    assert not has_answer("서울특별시는 수도", ["서울특별시"], "ko", mode="dpr")
    assert has_answer("서울특별시는 수도", ["서울특별시"], "ko", mode="lang_aware")
    assert has_answer("１９９０年に", ["1990"], "ja", mode="lang_aware")  # NFKC: full-width digits
    # other languages keep DPR's token rule in the language-aware mode
    assert not has_answer("Yorkshire", ["York"], "en", mode="lang_aware")


def result(qid, lang, answers, texts, ids=None, positive_ids=None):
    ids = ids or [f"p{i}" for i in range(len(texts))]
    r = {"id": qid, "question": "?", "answers": answers, "lang": lang,
         "ctxs": [{"id": i, "title": "", "text": t, "lang": lang, "score": -n, "source": "dense"}
                  for n, (i, t) in enumerate(zip(ids, texts))]}
    if positive_ids is not None:
        r["positive_ids"] = positive_ids
    return r


def test_topk_accuracy():
    results = [
        result("1", "en", ["Paris"], ["Paris is", "no", "no"]),  # first hit at rank 1
        result("2", "en", ["Rome"], ["no", "no", "in Rome"]),  # rank 3
        result("3", "en", ["Oslo"], ["no", "no", "no"]),  # none
    ]
    acc = topk_accuracy(results, [1, 2, 3, 5])
    assert acc == {1: approx(100 / 3), 2: approx(100 / 3), 3: approx(200 / 3), 5: approx(200 / 3)}


def test_recall_and_mrr_against_gold_passage_ids():
    results = [
        result("1", "en", ["-"], ["a", "b", "c", "d"], ids=["x", "a", "y", "b"], positive_ids=["a", "b"]),
        result("2", "en", ["-"], ["a", "b"], ids=["z", "w"], positive_ids=["z"]),
        result("3", "en", ["-"], ["a"], ids=["q"]),  # no gold ids: not counted
    ]
    # q1: recall@1 0, @2 1/2, @4 1; first gold at rank 2.  q2: all 1; rank 1.
    assert recall_at_k(results, [1, 2, 4]) == {1: 50.0, 2: 75.0, 4: 100.0}
    assert mrr_at_k(results, [1, 2, 4]) == {1: 0.5, 2: 0.75, 4: 0.75}


def test_score_retrieval_per_language_and_macro():
    results = [
        result("1", "en", ["Paris"], ["Paris"]),
        result("2", "en", ["Rome"], ["no"]),
        result("3", "ja", ["東京"], ["東京都"]),
    ]
    dpr = score_retrieval(results, [1], "dpr")
    assert dpr.per_language["en"].topk[1] == 50.0 and dpr.per_language["ja"].topk[1] == 0.0
    assert dpr.all.topk[1] == approx(100 / 3) and dpr.macro_topk[1] == 25.0
    aware = score_retrieval(results, [1], "lang_aware")
    assert aware.per_language["ja"].topk[1] == 100.0 and aware.macro_topk[1] == 75.0
    assert "recall" not in aware.to_dict()["all"]  # no gold ids in these records


def test_load_retrieval_results(tmp_path):
    rows = [result("1", "en", ["a"], ["a"]), {"id": "2", "answers": ["b"], "ctxs": [{"text": "b"}]}]
    path = write(tmp_path / "r.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError, match=r"r\.jsonl:2.*lang"):
        load_retrieval_results(path)
    loaded = load_retrieval_results(path, default_lang="en")
    assert [r["lang"] for r in loaded] == ["en", "en"]
    bad = write(tmp_path / "b.jsonl", json.dumps({"id": "1", "answers": [], "lang": "en"}) + "\n")
    with pytest.raises(InputError, match=r"b\.jsonl:1.*'ctxs'"):
        load_retrieval_results(bad)
    with pytest.raises(InputError, match=r"e\.json: the file is empty"):
        load_retrieval_results(write(tmp_path / "e.json", ""))
    assert load_retrieval_results(write(tmp_path / "l.json", "[]")) == []


def test_dpr_retriever_output_without_ids_is_scored(tmp_path):
    """DPR's dense_retriever writes records without an id, and scores as strings."""
    from xqa.io import read_results

    rows = [{"question": "capital of france", "answers": ["Paris"],
             "ctxs": [{"id": "3", "title": "Paris", "text": "Paris is the capital of France.", "score": "90.1",
                       "has_answer": True}]},
            {"question": "who wrote hamlet", "answers": ["Shakespeare"],
             "ctxs": [{"id": "4", "title": "Rome", "text": "Rome is in Italy.", "score": "80.5"}]}]
    path = write(tmp_path / "dpr_result.json", json.dumps(rows))
    loaded = load_retrieval_results(path, default_lang="en")
    assert [r["id"] for r in loaded] == ["dpr_result:0", "dpr_result:1"]
    # read_results (training, tuning) keeps its ids and languages required, and reads the string score
    with_ids = write(tmp_path / "r.jsonl", "".join(json.dumps({**r, "id": str(i), "lang": "en"}) + "\n"
                                                   for i, r in enumerate(rows)))
    assert [c.score for r in read_results(with_ids) for c in r.ctxs] == [90.1, 80.5]
    no_lang = write(tmp_path / "n.jsonl", json.dumps({**rows[0], "id": "1"}) + "\n")
    with pytest.raises(InputError, match=r"n\.jsonl:1: missing field 'lang' \(retrieval results name each "
                                         r"question's language.* give it after the file's name: n\.jsonl:en\)") as e:
        read_results(no_lang)
    assert "--lang" not in str(e.value)   # the commands that read them take no --lang
    assert [r.question.lang for r in read_results(f"{no_lang}:en")] == ["en"]   # FILE:LANG, as xqa data own
    with pytest.raises(XqaError, match=r"n\.jsonl:jp: 'jp' after the file name \(FILE:LANG\) is no language code"):
        read_results(f"{no_lang}:jp")
    bad = write(tmp_path / "s.jsonl", json.dumps({**rows[0], "id": "1", "lang": "en",
                                                   "ctxs": [{"id": "3", "text": "x", "score": "high"}]}) + "\n")
    with pytest.raises(InputError, match=r"s\.jsonl:1: ctxs\[0\]: field 'score' should be a number, found a string"):
        read_results(bad)


# --------------------------------------------------------------------------- significance


def test_paired_t_test_matches_scipy_and_hand_computation():
    from scipy import stats

    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 1.0]
    # differences 1, 0, 2, 3: mean 1.5, sample sd sqrt(5/3), t = 1.5 / (sd / 2)
    t_hand = 1.5 / (math.sqrt(5 / 3) / 2)
    res = paired_t_test(a, b)
    direct = stats.ttest_rel(a, b)
    assert res.t == approx(t_hand) and res.t == approx(direct.statistic)
    assert res.p_value == approx(direct.pvalue)
    assert (res.n, res.mean_diff) == (4, 1.5)


def test_paired_t_test_undefined_cases():
    assert paired_t_test([1.0, 2.0], [1.0, 2.0]).t is None  # identical systems
    assert paired_t_test([1.0], [0.0]).p_value is None  # one pair
    with pytest.raises(XqaError):
        paired_t_test([1.0], [1.0, 2.0])


def test_compare_systems_pairs_questions_by_id():
    gold = [q("1", "en", "a"), q("2", "en", "b"), q("3", "en", "c")]
    sa = evaluate(gold, {"1": "a", "2": "b", "3": "x"})  # F1 100, 100, 0
    sb = evaluate(gold, {"1": "a", "2": "x", "3": "x"})  # F1 100, 0, 0
    test = compare_systems(sa, sb)
    assert (test.n, test.mean_a, test.mean_b) == (3, approx(200 / 3), approx(100 / 3))
    from scipy import stats

    assert test.p_value == approx(stats.ttest_rel([100, 100, 0], [100, 0, 0]).pvalue)


# --------------------------------------------------------------------------- report


def test_report_writes_markdown_and_pngs(tmp_path):
    dense = [result("1", "en", ["Paris"], ["no", "Paris"]), result("2", "ja", ["東京"], ["東京"])]
    scd = [result("1", "en", ["Paris"], ["Paris", "no"]), result("2", "ja", ["東京"], ["no"])]
    gold = [q("1", "en", "Paris"), q("2", "ja", "東京")]
    sweep = {1: evaluate(gold, {"1": "Paris"}), 5: evaluate(gold, {"1": "Paris", "2": "東京"})}
    path = write_report(tmp_path / "rep", retrieval={"dense": dense, "scd": scd}, ks=[1, 2],
                        end_to_end={"sys": sweep[5]}, sweep=sweep,
                        comparison=("a", "b", "f1", compare_systems(sweep[5], sweep[1])))
    md = path.read_text(encoding="utf-8")
    for png in ("recall_all.png", "recall_en.png", "recall_ja.png", "em_vs_passages.png"):
        data = (tmp_path / "rep" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
        assert f"({png})" in md
    assert "| **macro** | 2 | 100.0 | 100.0 | 0 |" in md
    assert "Paired t-test" in md


# --------------------------------------------------------------------------- CLI


def test_cli_end_to_end(tmp_path, capsys):
    from xqa.cli import main

    gold = write(tmp_path / "gold.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "1", "question": "?", "answers": ["東京都"], "lang": "ja"},
        {"id": "2", "question": "?", "answers": ["the Beatles"], "lang": "en"},
        {"id": "3", "question": "?", "answers": ["Oslo"], "lang": "en"},
    ]))
    preds = write(tmp_path / "p.json", json.dumps({"1": "東京", "2": "The Beatles"}, ensure_ascii=False))
    out = tmp_path / "scores.json"
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "macro" in printed and "ja" in printed
    scores = json.loads(out.read_text(encoding="utf-8"))["end_to_end"]
    # ja: EM 0, F1 2/3; en: EM 1/2, F1 1/2 (question 3 has no prediction)
    assert scores["per_language"]["ja"]["f1"] == approx(200 / 3)
    assert scores["per_language"]["en"]["em"] == 50.0 and scores["per_language"]["en"]["n_missing"] == 1
    assert scores["macro"]["f1"] == approx((200 / 3 + 50) / 2)
    assert scores["mecab_dictionary"].startswith("unidic-lite")


def test_cli_retrieval_takes_the_selection_and_leaves_out_questions_without_answers(tmp_path, capsys):
    from xqa.cli import main

    rows = [result("1", "en", ["Paris"], ["Paris", "no"]), result("2", "de", ["Rom"], ["nein", "Rom"]),
            result("3", "de", ["Bern"], ["Bern", "nein"]), result("4", "de", [], ["was", "nein"])]
    rows[1]["split"] = rows[2]["split"] = "test"
    res = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.json"

    def scored(*extra):
        capsys.readouterr()
        assert main(["eval", "--retrieval", str(res), "--k", "1", "2", "--json", str(out), *extra]) == 0
        return json.loads(out.read_text())["retrieval"]["r.jsonl"]

    everything = scored()   # question 4 has no answer to find: left out, and said so
    assert everything["all"]["n"] == 3 and everything["all"]["topk_accuracy"]["1"] == pytest.approx(200 / 3)
    assert "r.jsonl: 1 of 4 questions without gold answers or passages left out" in capsys.readouterr().err
    assert set(scored("--where", "lang=de")["per_language"]) == {"de"}
    test = scored("--where", "split=test", "--per-lang", "1")   # the first of de's test questions
    assert test["all"]["n"] == 1 and test["all"]["topk_accuracy"] == {"1": 0.0, "2": 100.0}
    capsys.readouterr()
    assert main(["eval", "--retrieval", str(res), "--where", "split=dev"]) == 1
    assert "--where split=dev selects none of the 4 questions: split takes test" in capsys.readouterr().err
    assert main(["eval", "--retrieval", str(res), "--where", "id=4"]) == 1   # nothing left to score
    assert "r.jsonl: none of its 1 questions has gold answers or passages: nothing to score" in \
        capsys.readouterr().err


def test_cli_retrieval_and_errors(tmp_path, capsys):
    from xqa.cli import main

    res = write(tmp_path / "r.json", json.dumps([result("1", "en", ["Paris"], ["no", "Paris"])]))
    out = tmp_path / "o.json"
    assert main(["eval", "--retrieval", str(res), "--k", "1", "2", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["retrieval"]["r.json"]["all"]["topk_accuracy"] == {"1": 0.0, "2": 100.0}
    capsys.readouterr()   # cut-offs deeper than the results are left out, and said so
    assert main(["eval", "--retrieval", str(res), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["retrieval"]["r.json"]["all"]["topk_accuracy"] == {"1": 0.0}
    assert "note: top-5, top-20, top-100 left out: the results hold at most 2 passages a question" \
        in capsys.readouterr().err
    # the report names the depths scored, not the ones asked for (top-100 of 2 passages)
    assert main(["eval", "--retrieval", str(res), "--report", str(tmp_path / "rep")]) == 0
    md = next((tmp_path / "rep").glob("*.md")).read_text()
    assert "top-1" in md and "top-100" not in md and "@100" not in md
    bad = write(tmp_path / "bad.json", "{\n  nope\n}")
    gold = write(tmp_path / "g.jsonl", json.dumps({"id": "1", "question": "?", "answers": ["a"], "lang": "en"}) + "\n")
    capsys.readouterr()
    assert main(["eval", "--gold", str(gold), "--predictions", str(bad)]) == 1
    assert "bad.json:2" in capsys.readouterr().err
    assert main(["eval", "--predictions", str(bad)]) == 1  # no --gold
    # options a mode does not read are refused, not ignored
    for args, said in ((["--selective", str(bad), "--report", str(tmp_path / "rep")],
                        "--report does not go with --selective"),
                       (["--gold", str(gold), "--predictions", str(bad), "--plot", "p.png", "--threshold", "0.3"],
                        "--plot, --threshold: only with --selective"),
                       (["--gold", str(gold), "--predictions", str(bad), "--coverage", "--sweep", "x.json"],
                        "--sweep does not go with --coverage")):
        capsys.readouterr()
        assert main(["eval", *args]) == 1
        assert said in capsys.readouterr().err, args
    unfinished = tmp_path / "run"   # an xqa answer folder stopped before it wrote predictions.json
    unfinished.mkdir()
    (unfinished / "run.json").write_text(json.dumps({"settings": {"pipeline": {}}}))
    (unfinished / "records.jsonl").write_text(json.dumps({"id": "1", "answer": "a"}) + "\n")
    capsys.readouterr()
    assert main(["eval", "--gold", str(gold), "--predictions", str(unfinished)]) == 1
    assert (f"{unfinished}: an xqa answer run that has not finished (no predictions.json, which it writes when "
            f"every question is answered): run the same xqa answer command again") in capsys.readouterr().err
    empty = write(tmp_path / "empty.jsonl", "")
    empty_preds = write(tmp_path / "ep.json", "")
    capsys.readouterr()
    assert main(["eval", "--gold", str(empty), "--predictions", str(empty_preds), "--json", str(out)]) == 1
    assert "empty.jsonl: the file is empty" in capsys.readouterr().err


def test_a_language_xqa_reads_but_the_metric_has_no_rule_for_is_left_out_with_a_note(tmp_path, capsys):
    """xqa answer answers a Ukrainian question and its score line leaves it out; xqa eval, which
    that line suggests, does the same (it refused the whole file), and a typo stays an error."""
    from xqa.cli import main

    gold = write(tmp_path / "q.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "k1", "question": "Хто розробив QRpedia?", "lang": "uk", "answers": ["Роджер Бамкін"]},
        {"id": "k2", "question": "Who designed QRpedia?", "lang": "en", "answers": ["Roger Bamkin"]}]))
    preds = write(tmp_path / "p.json", json.dumps({"k1": "Роджер Бамкін", "k2": "Roger Bamkin"}, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--json", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    assert "note: 1 question(s) left out, in uk 1: the metric splits answers into words by language" in err
    assert "no question of --gold" not in err   # k1's prediction is of a question asked, not a stray one
    assert sorted(json.loads((tmp_path / "s.json").read_text())["end_to_end"]["per_language"]) == ["en"]
    typo = write(tmp_path / "t.jsonl", json.dumps({"id": "j", "question": "?", "lang": "jp", "answers": ["x"]}) + "\n")
    assert main(["eval", "--gold", str(typo), "--predictions", str(preds)]) == 1
    assert "t.jsonl:1: field 'lang': unknown language code 'jp'" in capsys.readouterr().err


def test_cli_warns_when_predictions_are_for_other_questions(tmp_path, capsys):
    """Predictions keyed by ids the gold set lacks are not scored; eval says so instead of a quiet
    table of zeros (none match) or of fewer questions than the file holds (some do not)."""
    from xqa.cli import main

    gold = write(tmp_path / "q.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "a1", "question": "?", "lang": "en", "answers": ["Paris"]},
        {"id": "7_ja", "question": "?", "lang": "ja", "answers": ["東京"]}]))
    other = write(tmp_path / "other.json", json.dumps({"b1": "Paris", "b2": "x"}))
    assert main(["eval", "--gold", str(gold), "--predictions", str(other)]) == 0
    err = capsys.readouterr().err
    assert "none of the 2 predictions is for a question of --gold" in err and "'b1'" in err and "'a1'" in err
    some = write(tmp_path / "some.json", json.dumps({"a1": "Paris", "7": "東京", "zz": "x"}, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--predictions", str(some), "--json", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    assert "1 of 3 predictions are for ids that no question of --gold has ('zz')" in err
    assert json.loads((tmp_path / "s.json").read_text())["end_to_end"]["macro"]["em"] == 100.0  # "7" keys 7_ja
    assert main(["eval", "--gold", str(gold), "--predictions", str(some), "--where", "lang=en"]) == 0
    assert "no question of --gold" not in capsys.readouterr().err   # a selection leaves the others out on purpose
    same = write(tmp_path / "same.json", json.dumps({"a1": "Paris", "7_ja": "東京"}, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--predictions", str(same)]) == 0
    assert "warning" not in capsys.readouterr().err
    # the predictions of a run over a selection: the questions left out score 0, and eval says so
    part = write(tmp_path / "part.json", json.dumps({"a1": "Paris"}))
    assert main(["eval", "--gold", str(gold), "--predictions", str(part)]) == 0
    assert "1 of 2 scored questions of --gold have no prediction ('7_ja') and score 0" in capsys.readouterr().err
    assert main(["eval", "--gold", str(gold), "--predictions", str(part), "--where", "lang=en"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["eval", "--gold", str(gold), "--predictions", str(part), "--per-lang", "1"]) == 0
    assert "1 of 2 scored questions selected of --gold have no prediction ('7_ja')" in capsys.readouterr().err
    assert main(["eval", "--gold", str(gold), "--compare", str(same), str(part), "--per-lang", "1"]) == 0
    assert "have no prediction of part.json ('7_ja')" in capsys.readouterr().err
    # --coverage checks the selection given, and an xqa answer folder is a --sweep point of its own
    assert main(["eval", "--gold", str(gold), "--predictions", str(part), "--coverage", "--where", "lang=en"]) == 0
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.json").write_text(same.read_text(encoding="utf-8"), encoding="utf-8")
    (run / "records.jsonl").write_text("")
    (run / "run.json").write_text(json.dumps({"settings": {"answer": {"n_passages": 7}}}))
    assert main(["eval", "--gold", str(gold), "--sweep", str(run), f"2={part}", "--json", str(tmp_path / "sw.json")]) == 0
    assert set(json.loads((tmp_path / "sw.json").read_text())["sweep"]) == {"2", "7"}   # 7 from its run.json
    assert main(["eval", "--gold", str(gold), "--sweep", str(tmp_path)]) == 1
    assert "a folder without an xqa answer run.json" in capsys.readouterr().err
    # each system of --compare and each point of --sweep is checked as --predictions are
    assert main(["eval", "--gold", str(gold), "--compare", str(same), str(other)]) == 0
    err = capsys.readouterr().err
    assert "none of the 2 predictions of other.json is for a question of --gold" in err and "same.json" not in err
    assert main(["eval", "--gold", str(gold), "--compare", str(same), str(same)]) == 0   # one file twice
    assert "t undefined" in capsys.readouterr().out
    assert main(["eval", "--gold", str(gold), "--sweep", f"5={same}", f"2={part}"]) == 0
    assert "1 of 2 scored questions of --gold have no prediction of 2 passages' part.json" in capsys.readouterr().err
    shaped = write(tmp_path / "shaped.json", json.dumps({"a1": {"text": "Paris"}, "7_ja": {"text": "x"}}))
    assert main(["eval", "--gold", str(gold), "--predictions", str(shaped)]) == 1
    assert "shaped.json:1: the prediction for 'a1' is an object with 'text'" in capsys.readouterr().err
    nothing = write(tmp_path / "nothing.json", "{}")
    assert main(["eval", "--gold", str(gold), "--predictions", str(nothing)]) == 0
    assert "the predictions hold no answer: every question of --gold scores 0" in capsys.readouterr().err
    # a question without gold answers is skipped by the scoring, so it is no "missing" prediction
    unanswerable = write(tmp_path / "q2.jsonl", gold.read_text(encoding="utf-8") + json.dumps(
        {"id": "x3", "question": "?", "lang": "en", "answers": []}) + "\n")
    assert main(["eval", "--gold", str(unanswerable), "--predictions", str(same)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_cli_says_a_selection_of_no_question_and_a_mia_score_with_an_empty_part(tmp_path, capsys):
    """A misspelt --where value or field selects nothing: an error naming what the field takes
    (or the fields there are), not an empty table; a record's true/false matches True/False. The
    MIA score is the mean of two parts' macro averages: with one part empty, it is not given."""
    from xqa.cli import main

    gold = write(tmp_path / "q.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "a1", "question": "?", "lang": "en", "answers": ["Paris"], "split": "test", "crosslingual": False},
        {"id": "a2", "question": "?", "lang": "ja", "answers": ["東京"], "split": "tune", "crosslingual": True}]))
    preds = write(tmp_path / "p.json", json.dumps({"a1": "Paris", "a2": "東京"}, ensure_ascii=False))
    run = ["eval", "--gold", str(gold), "--predictions", str(preds)]
    assert main(run + ["--where", "split=tst"]) == 1
    assert "--where split=tst selects none of the 2 questions: split takes test, tune" in capsys.readouterr().err
    assert main(run + ["--where", "splt=test"]) == 1
    err = capsys.readouterr().err
    assert "no question has a field 'splt' (their fields: crosslingual, id, lang, question, split)" in err
    assert main(run + ["--where", "crosslingual=False", "--json", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["end_to_end"]["n"] == 1
    capsys.readouterr()
    assert main(run + ["--mia", "--json", str(tmp_path / "m.json")]) == 0   # no MKQA id (…_ja) among them
    out = capsys.readouterr().out
    assert "MIA score: not given: the MKQA part has no scored question" in out and "MIA score (mean" not in out
    assert json.loads((tmp_path / "m.json").read_text())["mia"]["score"] is None
    # two runs' predictions.json compared: named by the folders that tell them apart
    for run, answers in (("one", {"a1": "Paris", "a2": "東京"}), ("two", {"a1": "Lyon", "a2": "東京"})):
        write(tmp_path / run / "predictions.json", json.dumps(answers, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--compare", str(tmp_path / "one" / "predictions.json"),
                 str(tmp_path / "two" / "predictions.json")]) == 0
    out = capsys.readouterr().out
    assert "one/predictions.json" in out and "two/predictions.json" in out, out


def test_cli_scores_a_gold_file_without_languages_with_lang(tmp_path, capsys, monkeypatch):
    """A user's own question file carries no lang: eval takes --lang CODE, or --lang auto as xqa
    answer does, and the language decides the segmentation (Japanese by character)."""
    from xqa.cli import main

    gold = write(tmp_path / "mine.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "1", "question": "What is the capital of Australia?", "answers": ["Canberra"]},
        {"id": "2", "question": "東京タワーの高さは？", "answers": ["333メートル"]}]))
    preds = write(tmp_path / "p.json", json.dumps({"1": "Canberra", "2": "333メートルです"}, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds)]) == 1
    assert "mine.jsonl:1: missing field 'lang'" in capsys.readouterr().err
    out = tmp_path / "s.json"
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--lang", "en", "--json", str(out)]) == 0
    assert set(json.loads(out.read_text())["end_to_end"]["per_language"]) == {"en"}
    monkeypatch.setattr("xqa.langid.identify", lambda text: "ja" if "東京" in text else "en")
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--lang", "auto", "--json", str(out)]) == 0
    assert "--lang auto: 2 question(s) identified as en 1, ja 1" in capsys.readouterr().err
    per_lang = json.loads(out.read_text())["end_to_end"]["per_language"]
    assert per_lang["en"]["f1"] == 100.0 and 0 < per_lang["ja"]["f1"] < 100.0   # by character: a partial match


def test_cli_coverage_checks_a_submission_without_answers(tmp_path, capsys):
    from xqa.cli import main

    # test questions carry no answers; MKQA ids are <number>_<lang> and may be answered by the bare number
    gold = write(tmp_path / "q.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "a1", "question": "?", "lang": "ja"},
        {"id": "7_ja", "question": "?", "lang": "ja"},
        {"id": "a2", "question": "?", "lang": "en"},
        {"id": "a3", "question": "?", "lang": "en"},
    ]))
    preds = write(tmp_path / "p.json", json.dumps({"a1": "東京", "7": "x", "a2": "  "}, ensure_ascii=False))
    out = tmp_path / "c.json"
    assert main(["eval", "--gold", str(gold), "--predictions", str(preds), "--coverage", "--json", str(out)]) == 1
    captured = capsys.readouterr()
    assert "coverage: INCOMPLETE" in captured.out and "missing: e.g. a3" in captured.err
    cov = json.loads(out.read_text())["coverage"]
    assert cov["total"] == {"questions": 4, "answered": 2, "empty": 1, "missing": 1}
    assert cov["per_language"]["ja"]["answered"] == 2 and cov["per_language"]["en"]["empty"] == 1
    full = write(tmp_path / "full.json", json.dumps({"a1": "東京", "7": "x", "a2": "y", "a3": "z"}, ensure_ascii=False))
    assert main(["eval", "--gold", str(gold), "--predictions", str(full), "--coverage"]) == 0
    assert "coverage: complete" in capsys.readouterr().out
    assert main(["eval", "--predictions", str(full), "--coverage"]) == 1     # needs the questions


# ------------------------------------------------------------------ tuning

def test_write_tuned_sets_the_fields_and_records_them(tmp_path):
    from xqa.config import PipelineConfig, RetrievalConfig
    from xqa.errors import XqaError
    from xqa.evaluation.tuning import write_tuned

    path = tmp_path / "pipeline.json"
    PipelineConfig(passages="passages.jsonl", retrieval=RetrievalConfig(sparse_index="bm25"),
                   tuned={"mu": 0.5}).save(path)
    assert write_tuned(path, retrieval={"alpha": 0.35, "normalize": True}) == path
    write_tuned(path, reader={"beta": 2.0}, tuned={"fusion": {"beta": 2.0}})
    cfg = PipelineConfig.load(path)
    assert (cfg.retrieval.alpha, cfg.retrieval.normalize, cfg.reader.beta) == (0.35, True, 2.0)
    assert cfg.tuned == {"mu": 0.5, "alpha": 0.35, "normalize": True, "fusion": {"beta": 2.0}}
    assert cfg.passages == "passages.jsonl" and cfg.retrieval.sparse_index == "bm25"
    with pytest.raises(XqaError, match="no pipeline config to write the tuned value into"):
        write_tuned(tmp_path / "none.json", retrieval={"alpha": 1.0})
    with pytest.raises(XqaError, match="not a pipeline config field"):
        write_tuned(path, retrieval={"alfa": 1.0})


def test_grid_search_keeps_the_best_and_breaks_ties_by_the_rule():
    from xqa.evaluation.tuning import alpha_grid, grid_search

    class Judge:
        def scores(self, lists, ks):
            return {k: lists[0] for k in ks}

    score = {0.0: 1.0, 0.5: 3.0, 1.0: 3.0, 1.5: 2.0}
    best, table, rows = grid_search(sorted(score), lambda v: [score[v]], Judge(), [1, 5], 5, "α",
                                    lambda v: f"{v:.1f}", lambda v: -v)
    assert best == 0.5 and table == score and rows[1] == ["0.5", 3.0, 3.0]
    assert alpha_grid(0.0, 2.0, 0.05)[-1] == 2.0 and len(alpha_grid()) == 41
    assert alpha_grid(0.0, 2.0, 0.3) == [0.0, 0.3, 0.6, 0.9, 1.2, 1.5, 1.8]   # never past --max-alpha
    for step, hi in ((5.0, 2.0), (0.0, 2.0), (-0.5, 2.0), (0.05, -1.0)):   # one value or none: no grid
        with pytest.raises(XqaError, match="give --step above 0 and below --max-alpha"):
            alpha_grid(0.0, hi, step)
