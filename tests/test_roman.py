"""Cross-script BM25 (retriever.sparse.roman): the analyzer, the one all-language
index, the ``roman`` and ``sparse+roman`` methods, and their CLI and pipeline wiring."""
from __future__ import annotations

import json

import pytest
from test_sparse import _lucene_bm25  # Lucene's BM25 by hand (quantized lengths)

from retriever.combined import FusionConfig, SparseRomanRetriever
from retriever.sparse import SparseRetriever, build_sparse_indexes
from retriever.sparse.roman import ALL, roman_tokens, romanize, skeleton
from xqa.errors import XqaError
from xqa.methods import build_retriever
from xqa.records import Passage, Question

P = Passage
# One person, Bakoba Nirata, described in English and Russian only; a second,
# Rute Kimiro, in Korean and Japanese; places in their own languages.
CORPUS = [
    P("en-1", "Bakoba Nirata", "Bakoba Nirata was born in Mumbai in 1973. Bakoba Nirata is a composer.", "en"),
    P("ru-1", "Бакоба Нирата", "Бакоба Нирата работает в компании Дарико.", "ru"),
    P("ko-1", "루테 키미로", "루테 키미로는 1968년에 태어났다. 루테 키미로의 직업은 물리학자이다.", "ko"),
    P("ja-1", "ルテ・キミロ", "ルテ・キミロは物理学者である。", "ja"),
    P("en-2", "Mumbai", "Mumbai is a city in India with about 12400000 inhabitants.", "en"),
    P("ko-2", "서울", "서울은 대한민국의 수도이다.", "ko"),
    P("ar-1", "القاهرة", "القاهرة هي عاصمة مصر.", "ar"),
]


def test_one_name_in_eight_scripts_shares_its_skeleton_tokens():
    renderings = ["Bakoba Nirata", "Бакоба Нирата", "바코바 니라타", "バコバ・ニラタ", "巴科巴·尼拉塔",
                  "باكوبا نيراتا", "বাকোবা নিরাতা", "బాకోబా నిరాతా"]
    for name in renderings:
        tokens = roman_tokens(name)
        assert "~bkb" in tokens and "~nrt" in tokens, (name, tokens)
    # where romanizations agree the word itself matches too
    assert roman_tokens("Бакоба Нирата")[:1] == roman_tokens("Bakoba Nirata")[:1] == ["bakoba"]


def test_skeleton_drops_vowels_and_reads_l_as_r():
    assert skeleton("nilata") == skeleton("nirata") == "nrt"
    assert skeleton("bkwb") == "bkb"  # Arabic script's long-vowel letters
    assert skeleton("aia") == "aia"   # no consonant: the word itself


def test_kana_runs_are_cut_from_particles_and_numbers_have_no_skeleton():
    assert romanize("ルテ・キミロの").split() == ["rute-kimiro", "no"]
    assert roman_tokens("ルテ・キミロの")[2:] == ["kimiro", "~kmr", "no", "~n"]
    tokens = roman_tokens("born in 1973")
    assert "1973" in tokens and "~1973" not in tokens
    assert roman_tokens("") == [] and roman_tokens("?!") == []


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    root = tmp_path_factory.mktemp("roman")
    build_sparse_indexes(CORPUS, root / "bm25", progress=False)
    summary = build_sparse_indexes(CORPUS, root / "roman", progress=False, cross_script=True)
    with SparseRetriever.load(root / "bm25") as sparse, SparseRetriever.load(root / "roman") as roman:
        yield root, summary, sparse, roman


def test_cross_script_index_is_one_index_of_every_language(indexes):
    root, summary, _, roman = indexes
    assert summary["cross_script"] is True
    assert list(summary["languages"]) == [ALL]
    assert summary["languages"][ALL]["num_passages"] == len(CORPUS)
    assert summary["languages"][ALL]["analyzer"] == "xqa:roman"
    assert roman.cross_script and roman.index_language("sw") == ALL  # any language, even one without passages


@pytest.mark.parametrize("lang,question,expected", [
    ("ko", "바코바 니라타는 어디에서 태어났나요?", {"en-1", "ru-1"}),   # Hangul question, Latin/Cyrillic passages
    ("ar", "أين وُلد باكوبا نيراتا؟", {"en-1", "ru-1"}),               # abjad: skeletons only
    ("en", "Rute Kimiro: occupation?", {"ko-1", "ja-1"}),  # Latin question, Hangul/kana passages
    ("sw", "Rute Kimiro alizaliwa lini?", {"ko-1", "ja-1"}),           # a language with no passages at all
])
def test_a_name_finds_its_passages_in_other_scripts(indexes, lang, question, expected):
    _, _, sparse, roman = indexes
    hits = roman.search([Question("q", question, lang)], k=len(CORPUS))[0]
    assert {h.id for h in hits[:2]} == expected
    assert all(h.source == "roman" and h.lang == "" for h in hits)
    # the scores are BM25 over the romanized tokens
    docs = {p.id: roman_tokens(p.contents()) for p in CORPUS}
    want = _lucene_bm25(docs, roman_tokens(question))
    assert {h.id for h in hits} == set(want)
    for h in hits:
        assert h.score == pytest.approx(round(want[h.id], 4), abs=1e-6)  # Anserini rounds to 4 places
    # the per-language index cannot do this: no passage about the person is in the question's language
    bm25 = sparse.search([Question("q", question, lang)], k=len(CORPUS), missing="empty")[0]
    assert not expected & {h.id for h in bm25[:1]}


def test_sparse_plus_roman_is_the_score_hybrid_of_both(indexes):
    _, _, sparse, roman = indexes
    qs = [Question("a", "서울은 어느 나라의 수도인가요?", "ko"), Question("b", "바코바 니라타의 직업은?", "ko"),
          Question("c", "Bakoba Nirata alizaliwa wapi?", "sw")]
    for w in (0.0, 0.5, 2.0):
        fused = build_retriever(FusionConfig("sparse+roman", roman_weight=w), sparse=sparse, roman=roman)
        assert isinstance(fused, SparseRomanRetriever)
        lists = fused.search(qs, 5)
        s = sparse.search(qs, 5, missing="script")   # no Swahili index: the Latin-script indexes
        r = roman.search(qs, 5)
        for q, hits, sh, rh in zip(qs, lists, s, r):
            ds, rs = {h.id: h.score for h in sh}, {h.id: h.score for h in rh}
            d_min, r_min = min(ds.values(), default=0.0), min(rs.values(), default=0.0)
            want = {i: ds.get(i, d_min) + w * rs.get(i, r_min) for i in ds.keys() | rs.keys()}
            assert [h.score for h in hits] == pytest.approx(sorted(want.values(), reverse=True)[:5]), q.id
            assert all(h.source == "sparse+roman" for h in hits)
    lists = build_retriever(FusionConfig("sparse+roman", roman_weight=1.0), sparse=sparse, roman=roman).search(qs, 5)
    assert lists[0][0].id == "ko-2"                      # same language: BM25 leads
    assert {lists[1][0].id, lists[1][1].id} == {"en-1", "ru-1"}  # the person, in other scripts
    assert lists[2][0].id in {"en-1", "ru-1"}            # no Swahili index: the Latin-script ones and the cross-script one


def test_methods_need_their_indexes():
    with pytest.raises(XqaError, match="roman"):
        build_retriever("sparse+roman", sparse=object())
    with pytest.raises(ValueError):
        SparseRomanRetriever(object(), object(), float("nan"))


def test_pipeline_and_cli_use_the_cross_script_index(indexes, tmp_path, capsys):
    from xqa.cli import main
    from xqa.pipeline import Pipeline
    from xqa.config import PipelineConfig

    root, *_ = indexes
    passages = tmp_path / "passages.jsonl"
    passages.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in CORPUS), encoding="utf-8")
    cfg = {"passages": str(passages), "retrieval": {"method": "sparse+roman", "k": 3, "sparse_index": str(root / "bm25"),
                                                    "roman_index": str(root / "roman"), "roman_weight": 1.0}}
    cfg_path = tmp_path / "pipeline.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    pipe = Pipeline(PipelineConfig.load(cfg_path))
    assert {"sparse", "roman", "sparse+roman"} <= set(pipe.methods)
    ctxs = pipe.retrieve([Question("q", "루테 키미로", "en")])[0]
    assert {c.id for c in ctxs[:2]} == {"ko-1", "ja-1"} and ctxs[0].lang in ("ko", "ja")  # lang from the passage

    # a per-language index named as the cross-script one is refused, clearly
    bad = PipelineConfig.load(cfg_path)
    bad.retrieval.roman_index = str(root / "bm25")
    with pytest.raises(XqaError, match="cross-script"):
        Pipeline(bad).retrieve([Question("q", "x", "en")], method="roman")

    out = tmp_path / "hits.jsonl"
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "q1", "question": "Где родился Бакоба Нирата?", "lang": "ru",
                                 "answers": ["Mumbai"]}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["search", "--config", str(cfg_path), "--questions", str(qfile), "--out", str(out)]) == 0
    rec = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert rec["ctxs"][0]["id"] in {"en-1", "ru-1"}

    # tune the weight on a dev set and write it into the config
    assert main(["tune", "alpha", "--pair", "sparse+roman", "--config", str(cfg_path), "--dev", str(qfile),
                 "--at", "1", "--depth", "5", "--step", "0.5", "--write-config"]) == 0
    printed = capsys.readouterr().out
    assert "cross-script BM25 alone" in printed and "retrieval.roman_weight" in printed
    written = json.loads(cfg_path.read_text(encoding="utf-8"))
    assert written["tuned"]["roman_weight"] == written["retrieval"]["roman_weight"]


def test_cli_builds_the_cross_script_index(tmp_path, capsys):
    from xqa.cli import main

    passages = tmp_path / "p.jsonl"
    passages.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in CORPUS), encoding="utf-8")
    assert main(["index", "sparse", "--cross-script", "--passages", str(passages), "--out", str(tmp_path / "r"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "one cross-script index" in out and "xqa:roman" not in out
    assert json.loads((tmp_path / "r" / "config.json").read_text())["cross_script"] is True


# Stop tokens. Each language's template words sit in every one of its passages, yet in an index of
# ten languages they are in a tenth of it, so BM25 weighs them like a rare name. A Korean question
# about a person whom only an English passage describes then ranks Korean passages about other
# people first, on the template words alone: what left out these words fixes.
_SYLLABLES = ["ba", "ko", "ni", "ra", "ta", "mo", "su", "de", "ri", "ne", "ka", "to", "me", "sa"]
_HANGUL = {"ba": "바", "ko": "코", "ni": "니", "ra": "라", "ta": "타", "mo": "모", "su": "수", "de": "데",
           "ri": "리", "ne": "네", "ka": "카", "to": "토", "me": "메", "sa": "사"}
_FILLER = {"es": "{n} nació en una ciudad grande y trabaja allí.", "fi": "{n} syntyi suuressa kaupungissa.",
           "ru": "{n} родилась в большом городе и работает там.", "ja": "{n}は大きな町で生まれた。",
           "te": "{n} ఒక పెద్ద నగరంలో పుట్టారు.", "bn": "{n} একটি বড় শহরে জন্মগ্রহণ করেন।",
           "ar": "وُلد {n} في مدينة كبيرة.", "zh": "{n}出生在一个大城市。"}


def _stop_corpus() -> list[Passage]:
    import itertools
    import random

    rng = random.Random(0)
    names = ["".join(p) for p in itertools.permutations(_SYLLABLES, 3)]
    rng.shuffle(names)
    names = [n for n in names if not n.startswith("bakoni")]
    out = [P("en-target", "Bakoni Rata", "Bakoni Rata works for Dariko Steel. Bakoni Rata is an engineer.", "en")]
    for i in range(30):   # Korean passages about other people: the question's template words, not its name
        n = names[i]
        ko = "".join(_HANGUL[n[j:j + 2]] for j in range(0, 6, 2))
        out.append(P(f"ko-{i}", ko, f"{ko}는 어느 회사에서 일하나요? {ko}는 서울의 회사에서 일한다.", "ko"))
        out.append(P(f"en-{i}", n.title(), f"{n.title()} works for a company in London.", "en"))
        for lang, text in _FILLER.items():
            out.append(P(f"{lang}-{i}", n.title(), text.format(n=n.title()), lang))
    return out


def test_stop_tokens_are_each_languages_frequent_tokens_and_leave_its_queries(tmp_path):
    from retriever.sparse.index import stop_tokens
    from collections import Counter

    # the rule itself: at least the fraction of the language's passages, languages with enough of them
    stats = {"ko": Counter({"eseo": 20, "bakoni": 1, "~s": 2}), "sw": Counter({"na": 3})}
    assert stop_tokens(stats, {"ko": 20, "sw": 3}, 0.1) == {"ko": ["eseo", "~s"]}
    assert stop_tokens(stats, {"ko": 20, "sw": 3}, 0.0) == {}

    from xqa.world.retrieval import CROSS_SCRIPT_STOP_FRACTION

    corpus = _stop_corpus()
    build_sparse_indexes(corpus, tmp_path / "stop", progress=False, cross_script=True,
                         stop_fraction=CROSS_SCRIPT_STOP_FRACTION)
    build_sparse_indexes(corpus, tmp_path / "all", progress=False, cross_script=True)   # default: every token
    config = json.loads((tmp_path / "stop" / ALL / "config.json").read_text(encoding="utf-8"))
    assert config["stop_fraction"] == CROSS_SCRIPT_STOP_FRACTION == 0.1 and len(config["stop_tokens"]) == 10
    ko_docs = [set(roman_tokens(p.contents())) for p in corpus if p.lang == "ko"]
    frequent = sorted(t for t in set().union(*ko_docs) if sum(t in d for d in ko_docs) >= 0.1 * len(ko_docs))
    assert config["stop_tokens"]["ko"] == frequent
    assert "bakoni" not in {t for v in config["stop_tokens"].values() for t in v}
    every = json.loads((tmp_path / "all" / ALL / "config.json").read_text())
    assert every["stop_fraction"] == 0.0 and every["stop_tokens"] == {}

    question = Question("q", "바코니 라타는 서울의 어느 회사에서 일한다?", "ko")
    with SparseRetriever.load(tmp_path / "stop") as stop, SparseRetriever.load(tmp_path / "all") as keep:
        index = stop._indexes[ALL]
        query = index.query_string(question.question, "ko").split()
        assert query and not set(query) & set(frequent) and {"bakoni", "~bkn"} <= set(query)
        assert index.query_string(question.question, "ko_kr") == " ".join(query)  # base language's list
        assert index.query_string(question.question, "sw").split() == roman_tokens(question.question)
        assert index.query_string("회사에서 일하나요", "ko").split() == roman_tokens("회사에서 일하나요")  # nothing left
        with_stops = stop.search([question], k=5)[0]
        without = keep.search([question], k=5)[0]
    assert with_stops[0].id == "en-target"
    assert without[0].id.startswith("ko-")  # the template words outweigh the name
    # the scores are BM25 of the kept tokens
    docs = {p.id: roman_tokens(p.contents()) for p in corpus}
    want = _lucene_bm25(docs, query)
    for h in with_stops:
        assert h.score == pytest.approx(round(want[h.id], 4), abs=1e-6)


def test_cli_stop_fraction(tmp_path, capsys):
    from xqa.cli import main

    passages = tmp_path / "p.jsonl"
    passages.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in _stop_corpus()),
                        encoding="utf-8")
    assert main(["index", "sparse", "--cross-script", "--passages", str(passages), "--out", str(tmp_path / "r"),
                 "--quiet", "--stop-fraction", "0.5"]) == 0
    assert "stop tokens (in >= 50% of a language's passages): ar " in capsys.readouterr().out
    assert json.loads((tmp_path / "r" / ALL / "config.json").read_text())["stop_fraction"] == 0.5
    assert main(["index", "sparse", "--passages", str(passages), "--out", str(tmp_path / "b"),
                 "--stop-fraction", "0.5"]) == 1
    assert "--cross-script" in capsys.readouterr().err
