"""Offline language identification: the rules (xqa.langid.rules), "unknown" (xqa.langid.model), the codes
(xqa.langid.codes), the report."""
from __future__ import annotations

import pytest

from xqa.langid.codes import LANGUAGE_NAMES, UNKNOWN, language_name, pipeline_language, resolve_language, \
    searched_language
from xqa.langid.model import VETO, cue_language, identify, identify_language, script_letters
from xqa.langid.rules import detect_language, script_of

# Short questions as users type them: with and without punctuation, accents, capitals.
CASES = [
    # the ten languages of XOR-TyDi + English
    ("ar", "ما هي عاصمة مصر؟"),
    ("ar", "من هو مؤلف كتاب الأغاني"),
    ("bn", "কে গীতাঞ্জলি লিখেছেন?"),
    ("en", "What is the capital of France?"),
    ("en", "who wrote hamlet"),
    ("en", "Population of Tokyo"),
    ("es", "¿Quién escribió Don Quijote?"),
    ("es", "cuando nacio simon bolivar"),
    ("es", "Cuál es la capital de Perú"),
    ("fi", "Mikä on Suomen pääkaupunki?"),
    ("fi", "Milloin Sibelius syntyi"),
    ("fi", "Kuka kirjoitti Seitsemän veljestä?"),
    ("ja", "東京タワーの高さは？"),
    ("ja", "日本の首都はどこですか"),
    ("ja", "アメリカ合衆国の初代大統領は誰"),
    ("ko", "한국의 수도는 어디입니까?"),
    ("ko", "세종대왕은 언제 한글을 만들었나요"),
    ("ru", "Кто написал «Войну и мир»?"),
    ("ru", "сколько лет москве"),
    ("te", "తెలంగాణ రాజధాని ఏది?"),
    ("zh", "中国的首都是哪里？"),
    ("zh", "誰發明了電話"),
    # other MIA / MKQA languages (best effort)
    ("km", "រាជធានីនៃប្រទេសកម្ពុជាគឺជាអ្វី?"),
    ("ms", "Siapakah perdana menteri Malaysia yang pertama?"),
    ("ms", "Bilakah Malaysia merdeka"),
    ("sv", "Vad heter Sveriges huvudstad?"),
    ("sv", "När föddes Astrid Lindgren"),
    ("tr", "Türkiye'nin başkenti neresidir?"),
    ("tr", "Atatürk hangi yılda doğdu"),
    ("th", "ประเทศไทยมีกี่จังหวัด"),
    ("de", "Wer hat die Relativitätstheorie entwickelt?"),
    ("fr", "Qui a écrit Les Misérables ?"),
    ("it", "Chi ha dipinto la Gioconda?"),
    ("pt", "Quem descobriu o Brasil?"),
    ("nl", "Wie schreef Max Havelaar?"),
    ("no", "Hvem skrev Peer Gynt?"),
    ("da", "Hvornår blev Danmark medlem af EU?"),
    ("pl", "Kto napisał Pana Tadeusza?"),
    ("hu", "Ki írta a Himnuszt?"),
    ("vi", "Ai là tổng thống đầu tiên của Việt Nam?"),
    ("tl", "Sino ang pambansang bayani ng Pilipinas?"),
    ("he", "מי כתב את ספר בראשית?"),
    ("uk", "Хто написав «Кобзар»? Її автор"),
    ("fa", "پایتخت ایران کجاست؟"),
    ("hi", "भारत की राजधानी क्या है"),
    ("ta", "இந்தியாவின் தலைநகரம் எது"),
    ("el", "Ποιος έγραψε την Οδύσσεια;"),
    # MKQA-style: an English title inside a question in another language
    ("ar", "من غنى i want to be with you everywhere"),
    ("zh", "歌曲oh what a night是谁演唱的"),
    ("ru", "кто поет love you like there's no tomorrow"),
    ("km", "ដែលច្រៀង i want to be with you everywhere"),
    ("sv", "vem sjöng i want to know your name"),
    ("sv", "som sjunger here we go again"),
    ("es", "quién canta where the streets have no name"),
    ("fi", "kuka lauloi how do you talk to an angel"),
    ("fi", "lauloiko tom cruise elokuvassa rock of ages"),
    ("tr", "pride and prejudice'in ana karakterleri kimlerdir"),
    ("tr", "northridge depreminin büyüklüğü neydi"),
    ("ms", "siapa penyanyi lagu oh what a night"),
    ("ms", "pernahkah ada kubu di fort lauderdale"),
    # English with words other languages list too ("a", "was", "die")
    ("en", "is a chickpea a pea or a bean"),
    ("en", "when was the movie chitty chitty bang bang made"),
    ("en", "when did the last emperor die"),
]


@pytest.mark.parametrize("lang,text", CASES, ids=[f"{lang}-{i}" for i, (lang, _) in enumerate(CASES)])
def test_detects_the_language_of_short_questions(lang, text):
    assert detect_language(text) == lang


def test_every_returned_code_has_a_name():
    for _, text in CASES:
        assert detect_language(text) in LANGUAGE_NAMES


def test_a_code_xqa_has_no_name_for_is_named_as_lingua_names_it():
    """Identification may read a question as Latin or Welsh, which xqa has no index for: the demo
    and xqa ask say "reads as Latin (la)", not "reads as la (la)"."""
    from xqa.langid.codes import language_name

    assert "la" not in LANGUAGE_NAMES and language_name("la") == "Latin" and language_name("cy") == "Welsh"
    assert language_name("ja") == LANGUAGE_NAMES["ja"] and language_name("qq") == "qq"


def test_identify_says_what_it_takes_where_given_something_else():
    from xqa.errors import XqaError

    assert identify_language("Who wrote Hamlet?", ["en"]) == "en"
    with pytest.raises(XqaError, match=r"languages is a list of codes \(e.g. \['en'\]\), not a string"):
        identify_language("Who wrote Hamlet?", "en")      # list("en") would be ["e", "n"]: und
    with pytest.raises(XqaError, match="identify: the text of a question, not NoneType"):
        identify(None)


def test_text_without_letters_gets_the_default():
    assert detect_language("") == "en"
    assert detect_language("  123 ?!") == "en"
    assert detect_language("42", default="fi") == "fi"


def test_latin_text_without_cues_is_english_not_a_guess_from_names():
    # proper names carry sequences typical of other languages ("ee", "oo", "tt")
    assert detect_language("Beethoven") == "en"
    assert detect_language("Matt Scott") == "en"


def test_script_decides_over_latin_loanwords():
    # a Japanese question naming an English product is still Japanese
    assert detect_language("iPhoneを発売した会社は？") == "ja"
    assert detect_language("NASA는 언제 설립되었나요") == "ko"
    assert detect_language("Что такое NASA") == "ru"


def test_kanji_only_text_reads_as_chinese():
    assert detect_language("東京") == "zh"


def test_script_of():
    assert script_of("a") == "latin"
    assert script_of("ä") == "latin"
    assert script_of("ア") == "kana"
    assert script_of("字") == "han"
    assert script_of("한") == "hangul"
    assert script_of("1") is None
    assert script_of(" ") is None


def test_resolve_language_maps_onto_available_codes():
    assert resolve_language("zh", ["en", "zh_cn"]) == "zh_cn"
    assert resolve_language("ms", ["id", "en"]) == "id"
    assert resolve_language("ja", ["ja", "en"]) == "ja"
    assert resolve_language("sw", ["en", "ja"]) == "sw"  # no stand-in: unchanged
    assert resolve_language("zh", []) == "zh"


def test_language_name():
    assert language_name("fi") == "Finnish"
    assert language_name("xx") == "xx"


# ---------------------------------------------------------------- "unknown" (xqa.langid.model)


# The languages of MIA 2022 and of the real sets: a pipeline with an index for each.
PIPELINE = ("ar", "bn", "de", "en", "es", "fi", "hi", "id", "ja", "km", "ko", "ms", "ru", "sv", "sw", "te", "th",
            "tr", "vi", "zh")


def _scorer(*scores):
    """A stand-in for lingua's scores, recording what it was asked."""
    asked = []

    def score(text):
        asked.append(text)
        return list(scores)
    score.asked = asked
    return score


def _no_model(text):
    raise AssertionError(f"the model was asked about {text!r}")


def test_no_letters_is_unknown():
    assert identify("", scorer=_no_model) == UNKNOWN
    assert identify(" 42 ?! ", scorer=_no_model) == UNKNOWN


def test_a_script_of_one_language_decides_without_the_model():
    assert identify("한국의 수도는 어디입니까?", scorer=_no_model) == "ko"
    assert identify("東京タワーの高さは？", scorer=_no_model) == "ja"
    assert identify("ประเทศไทยมีกี่จังหวัด", scorer=_no_model) == "th"
    assert identify("រាជធានីនៃប្រទេសកម្ពុជាគឺជាអ្វី?", scorer=_no_model) == "km"


def test_the_cue_stands_unless_the_model_is_sure_of_another_language():
    # a German name makes lingua lean German; the English question word stands
    assert identify("Where did Friedrich Fülleborn die?", scorer=_scorer(("de", 0.46), ("en", 0.1))) == "en"
    assert identify("Who founded Mathematische Nachrichten?", scorer=_scorer(("de", VETO - 0.01))) == "en"
    # "wer" is a German question word, but lingua is sure the question is Dutch
    assert identify("Wer schreef Max Havelaar?", scorer=_scorer(("nl", VETO), ("de", 0.05))) == "nl"


def test_without_a_cue_the_model_decides():
    assert identify("Kdo napsal Babičku?", scorer=_scorer(("cs", 0.5), ("sk", 0.2))) == "cs"
    assert identify("zzz", scorer=_scorer()) == UNKNOWN  # no language the model knows


def test_malay_and_indonesian_go_by_the_model():
    assert identify("Siapa presiden pertama Indonesia?", scorer=_scorer(("id", 0.4), ("ms", 0.3))) == "id"
    assert identify("Siapa perdana menteri pertama Malaysia?", scorer=_scorer(("ms", 0.4), ("id", 0.3))) == "ms"


def test_the_model_reads_only_the_letters_of_the_question_script():
    score = _scorer(("ru", 0.9))
    assert identify("кто поет love you like there's no tomorrow", scorer=score) == "ru"
    assert "love" not in score.asked[0] and "кто поет" in score.asked[0]
    assert script_letters("歌曲oh what a night是谁", "han").split() == ["歌曲", "是谁"]


def test_without_the_model_the_rules_decide():
    assert identify("Kuka kirjoitti Seitsemän veljestä?", scorer=lambda text: None) == "fi"


def test_cue_language():
    assert cue_language("vem sjöng i want to know your name") == "sv"
    assert cue_language("Nani alikuwa rais wa kwanza wa Kenya?") == "sw"
    assert cue_language("lauloiko tom cruise elokuvassa") == "fi"
    assert cue_language("Kdo napsal Babičku?") is None
    assert cue_language("Tko je napisao Povratak Filipa Latinovicza?") is None  # "je" is no Swahili cue


def test_pipeline_language_maps_onto_the_pipeline_or_unknown():
    assert pipeline_language("zh", ["en", "zh_cn"]) == "zh_cn"
    assert pipeline_language("id", ["ms", "en"]) == "ms"
    assert pipeline_language("sw", ["en", "ja"]) == UNKNOWN
    assert pipeline_language("cs", PIPELINE) == UNKNOWN
    assert pipeline_language("cs", []) == "cs"  # no list: any language
    assert pipeline_language(UNKNOWN, ["en"]) == UNKNOWN
    assert language_name(UNKNOWN) == "unknown language"


def test_searched_language_keeps_what_a_question_reads_as_only_where_it_is_searched_as_unknown():
    assert searched_language("zh", ["en", "zh_cn"]) == ("zh_cn", "")
    assert searched_language("fr", ["en", "de"]) == (UNKNOWN, "fr")
    assert searched_language(UNKNOWN, ["en", "de"]) == (UNKNOWN, "")
    assert searched_language("fr", []) == ("fr", "")


def test_importing_the_identifier_does_not_load_lingua():
    import subprocess
    import sys

    code = "import sys, xqa.langid, xqa.tools.lib.langid, xqa.tools.report_langid; print('lingua' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# With lingua's models (in its wheel; no network). Questions inside and outside the pipeline's languages.
IN_PIPELINE = [
    ("en", "Who wrote the novel Things Fall Apart?"),
    ("en", "how many seasons of the walking dead are there"),
    ("de", "Wann wurde die Berliner Mauer gebaut?"),
    ("es", "¿Cuál es el río más largo de España?"),
    ("fi", "Milloin Suomi itsenäistyi?"),
    ("sv", "Vem skrev Pippi Långstrump?"),
    ("tr", "Türkiye'nin en yüksek dağı hangisidir?"),
    ("vi", "Ai là tác giả của Truyện Kiều?"),
    ("sw", "Nani alikuwa rais wa kwanza wa Tanzania?"),
    ("sw", "Mlima Kilimanjaro uko wapi?"),
    ("id", "Kapan Indonesia merdeka?"),
    ("ru", "Кто написал «Войну и мир»?"),
    ("ru", "кто поет love you like there's no tomorrow"),
    ("ar", "ما هي عاصمة مصر؟"),
    ("hi", "भारत की राजधानी क्या है?"),
    ("zh", "中国的首都是哪里？"),
    ("ja", "日本の首都はどこですか"),
    ("bn", "কে গীতাঞ্জলি লিখেছেন?"),
    ("km", "រាជធានីនៃប្រទេសកម្ពុជាគឺជាអ្វី?"),
]
OUTSIDE = [
    ("cs", "Kdo napsal Babičku?"),
    ("cs", "Kolik obyvatel má Brno?"),
    ("ro", "Cine a scris Luceafărul?"),
    ("ro", "Care este cel mai lung râu din România?"),
    ("hr", "Tko je izumio đir po Jadranu?"),
    ("hr", "Gdje je rođen Nikola Tesla?"),
    ("mk", "Кој е главниот град на Македонија?"),
    ("pl", "Kiedy urodził się Mikołaj Kopernik?"),
    ("pt", "Quem escreveu Os Lusíadas?"),
    ("nl", "Wie schreef Max Havelaar?"),  # "wie" is a German question word too
    ("fa", "پایتخت ایران کجاست؟"),
]


@pytest.fixture(scope="module")
def lingua_loaded():
    """lingua's models, loaded once per process: seconds (marked slow)."""
    pytest.importorskip("lingua")
    from xqa.langid import warm_up

    warm_up()


@pytest.mark.slow
@pytest.mark.parametrize("lang,text", IN_PIPELINE, ids=[f"{lang}-{i}" for i, (lang, _) in enumerate(IN_PIPELINE)])
def test_questions_in_the_pipeline_languages(lingua_loaded, lang, text):
    assert identify_language(text, PIPELINE) == lang


@pytest.mark.slow
@pytest.mark.parametrize("lang,text", OUTSIDE, ids=[f"{lang}-{i}" for i, (lang, _) in enumerate(OUTSIDE)])
def test_other_languages_are_unknown_not_mislabelled(lingua_loaded, lang, text):
    assert identify(text) == lang
    assert identify_language(text, PIPELINE) == UNKNOWN


@pytest.mark.slow
def test_swahili_is_unknown_to_a_pipeline_without_it(lingua_loaded):
    mia = ("ar", "bn", "en", "es", "fi", "ja", "km", "ko", "ms", "ru", "sv", "te", "tr", "zh")
    for text in ("Nani alikuwa rais wa kwanza wa Tanzania?", "Mlima Kilimanjaro uko wapi?"):
        assert identify_language(text, mia) == UNKNOWN
    # the rules alone label them English: what "unknown" replaces
    assert detect_language("Nani alikuwa rais wa kwanza wa Tanzania?") == "en"


# ---------------------------------------------------------------- identified in a child process

@pytest.fixture
def no_detector_here(monkeypatch):
    """As in a fresh ``xqa ask``: lingua not loaded in this process, two cores or more."""
    from xqa.langid import model

    monkeypatch.setattr(model, "_detector", None)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    return model


@pytest.mark.slow
def test_a_question_identified_in_a_child_process_gets_the_code_identify_gives(no_detector_here):
    pytest.importorskip("lingua")
    said = []
    texts = ["Кто написал «Войну и мир»?", "日本の首都はどこですか", "Wie schreef Max Havelaar?"]
    pending = [no_detector_here.identify_elsewhere(t, say=said.append) for t in texts]
    assert no_detector_here._detector is None           # nothing loaded here
    # kana decides alone: no child, and nothing of lingua loads here either
    started = []
    import subprocess

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or pytest.fail("a child started"))
        assert no_detector_here.identify_elsewhere("東京タワーの高さは？")() == "ja"
    assert started == [] and no_detector_here._detector is None
    assert [f() for f in pending] == ["ru", "ja", "nl"] == [identify(t) for t in texts]
    assert all(line == "identifying the question's language ..." for line in said)


def test_the_childs_warnings_reach_the_caller_and_a_failed_child_leaves_the_work_here(no_detector_here,
                                                                                      monkeypatch):
    model = no_detector_here
    reply = "import json; print(json.dumps({'code': 'fr', 'warnings': ['lingua is missing']}))"
    monkeypatch.setattr(model, "_CHILD", reply)
    with pytest.warns(UserWarning, match="lingua is missing"):
        assert model.identify_elsewhere("Qui a écrit Candide ?")() == "fr"
    here = []
    monkeypatch.setattr(model, "identify", lambda text, *a, **k: here.append(text) or "xx")
    for child in ("import sys; sys.exit(3)", "print('not json')", "import json; print(json.dumps({'code': 7}))"):
        monkeypatch.setattr(model, "_CHILD", child)
        assert model.identify_elsewhere("Qui a écrit Candide ?")() == "xx"
    assert here == ["Qui a écrit Candide ?"] * 3
    # one core: no child at all
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(model, "_CHILD", reply)
    assert model.identify_elsewhere("Qui a écrit Candide ?")() == "xx"


# ---------------------------------------------------------------- what "unknown" does downstream

class _FakeIndex:
    """One language's BM25 index: fixed hits per query, no Java."""

    def __init__(self, lang, hits):
        self.lang, self.hits, self.asked = lang, hits, []

    def batch_search(self, texts, k, threads, lang=None):
        from xqa.records import Hit

        self.asked.append((list(texts), lang))
        return [[Hit(id=pid, score=s, source="sparse", lang=self.lang) for pid, s in self.hits][:k] for _ in texts]


def test_bm25_searches_a_question_in_the_index_of_the_code_that_stands_in_for_its_language(tmp_path):
    """MKQA's Malay questions (lang ms) on a build with an Indonesian index, Chinese ones on a zh_cn
    index: a question file's own codes reach the index xqa ask would map them onto."""
    from retriever.sparse.searcher import SparseRetriever
    from xqa.records import Question

    indexes = {lang: _FakeIndex(lang, [(f"{lang}-1", 1.0)]) for lang in ("id", "zh_cn")}
    bm25 = SparseRetriever(tmp_path, {"languages": sorted(indexes)}, indexes, threads=1)
    hits = bm25.search([Question(id="1", question="siapakah", lang="ms"),
                        Question(id="2", question="谁", lang="zh")], k=2)
    assert [[h.id for h in row] for row in hits] == [["id-1"], ["zh_cn-1"]]
    assert bm25.index_language("fi") is None


def test_bm25_searches_the_indexes_of_an_unknown_language_question_s_script(tmp_path):
    from retriever.sparse.searcher import SparseRetriever
    from xqa.errors import XqaError
    from xqa.records import Question

    en = _FakeIndex("en", [("en-1", 9.0), ("en-2", 3.0)])
    fi = _FakeIndex("fi", [("fi-1", 5.0)])
    # Latin names inside Thai paragraphs are rare in the Thai index: a high IDF, a high score
    th = _FakeIndex("th", [("th-1", 26.0)])
    bm25 = SparseRetriever(tmp_path, {"languages": ["en", "fi", "th"]}, {"en": en, "fi": fi, "th": th},
                           threads=1)
    qs = [Question(id="q1", question="Kdo napsal Babičku?", lang=UNKNOWN),
          Question(id="q2", question="Kuka?", lang="fi")]
    hits = bm25.search(qs, k=2)
    assert [(h.id, h.lang) for h in hits[0]] == [("en-1", "en"), ("fi-1", "fi")]  # merged by score, top k
    assert [h.id for h in hits[1]] == ["fi-1"]
    assert en.asked == [(["Kdo napsal Babičku?"], None)]  # the English index saw only the unknown question
    assert th.asked == []  # a Latin-script question is not searched among Thai paragraphs
    with pytest.raises(XqaError, match="no BM25 index for language 'sw'"):
        bm25.search([Question(id="q3", question="Nani?", lang="sw")], k=2)  # a known language without index


def test_an_unknown_language_question_reaches_the_indexes_of_its_script_only(tmp_path):
    from retriever.sparse.searcher import SparseRetriever
    from xqa.records import Question

    indexes = {lang: _FakeIndex(lang, [(f"{lang}-1", 1.0)]) for lang in ("en", "ja", "ko", "th", "zh_cn")}
    bm25 = SparseRetriever(tmp_path, {"languages": sorted(indexes)}, indexes, threads=1)
    texts = {"kanji": "東京タワーの高さ", "han": "北京的人口", "hangul": "서울의 인구는", "thai": "กรุงเทพ",
             "cyrillic": "Кто написал?", "digits": "1984?"}
    hits = bm25.search([Question(id=name, question=t, lang=UNKNOWN) for name, t in texts.items()], k=5)
    found = {name: sorted(h.lang for h in row) for name, row in zip(texts, hits)}
    assert found == {"kanji": ["ja"],                 # kana: Japanese alone
                     "han": ["ja", "zh_cn"],          # kanji-only text may be either
                     "hangul": ["ko"], "thai": ["th"],
                     "cyrillic": [],                  # no index is written in Cyrillic: no BM25 hits
                     "digits": ["en", "ja", "ko", "th", "zh_cn"]}  # no letters: every index


def test_language_scripts():
    from xqa.langid.rules import language_scripts

    assert language_scripts("en") == language_scripts("sw") == {"latin"}
    assert language_scripts("ja") == {"kana", "han"}
    assert language_scripts("zh_cn") == language_scripts("zh-TW") == {"han"}
    assert language_scripts("ko") == {"hangul"}     # its own words, not the hanja it quotes
    assert language_scripts("th") == {"thai"} and language_scripts("hi") == {"devanagari"}
    assert language_scripts("ru") == {"cyrillic"} and language_scripts("sr") == {"cyrillic", "latin"}
    assert language_scripts("fa") == language_scripts("ar") == {"arabic"}


# ---------------------------------------------------------------- the measurement (xqa.tools.lib.langid)

def test_report_measures_each_identifier_per_set_and_language(tmp_path, monkeypatch):
    import json

    from xqa.tools.lib import langid as bench

    monkeypatch.setattr("xqa.langid.model.warm_up", lambda: None)  # no lingua here

    (tmp_path / "xor_tydi").mkdir()
    rows = [{"id": str(i), "question": q, "answers": [], "lang": lang}
            for i, (lang, q) in enumerate([("fi", "Kuka kirjoitti Kalevalan?"), ("ru", "Кто написал?"),
                                           ("fi", "Milloin Sibelius syntyi?")])]
    (tmp_path / "xor_tydi" / "xor_train_retrieve_eng_span.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    samples = bench.load_samples(tmp_path, per_language=1)
    assert [(s.set, s.use, s.lang, len(s.texts)) for s in samples] == [
        ("XOR-TyDi train", "train", "fi", 1), ("XOR-TyDi train", "train", "ru", 1)]
    samples.append(bench.Sample("probe (hand-written)", "probe", "cs", ["Kdo napsal Babičku?"]))
    which = {"always-fi": lambda text: "fi", "rules": detect_language}
    report = bench.measure(samples, ("en", "fi", "ru"), which=which)
    table = bench.table(report)
    assert "| XOR-TyDi train | train | fi | 1 | 100.0 | 0.0 | 100.0 | 0.0 |" in table
    assert "| XOR-TyDi train | train | ru | 1 | 0.0 | 0.0 | 100.0 | 0.0 |" in table
    assert "| probe (hand-written) | probe | cs→und | 1 | 0.0 | 0.0 | 0.0 | 0.0 |" in table  # rules: English
    assert "CPU µs / question" in table
    assert bench.chosen_veto([(0.5, 0.949), (0.6, 0.9505), (0.7, 0.951), (1.01, 0.951)]) == 0.6


def test_report_without_the_shared_data_says_so(tmp_path, capsys, monkeypatch):
    import argparse

    from xqa.tools.lib import langid as bench
    from xqa.tools import report_langid

    monkeypatch.setattr(bench, "identifiers", lambda: {"rules": detect_language})
    monkeypatch.setattr("xqa.langid.model.warm_up", lambda: None)
    args = argparse.Namespace(data=str(tmp_path / "absent"), languages="en,fi", per_language=10, seed=0,
                              grid=False, documents=None, cuts=[0], out=str(tmp_path / "langid.md"))
    assert report_langid.run(args) == 0
    err, out = capsys.readouterr().err, (tmp_path / "langid.md").read_text(encoding="utf-8")
    assert "skipped the public question sets" in err and "absent" in err
    assert "| probe (hand-written) | probe | cs→und |" in out
    args.grid = True
    assert report_langid.run(args) == 0
    assert "no train split" in capsys.readouterr().err


# ---------------------------------------------------------------- a document's language

def test_a_document_takes_lingua_s_language_where_it_is_confident_or_the_rules_agree(monkeypatch):
    """A short text spreads lingua's confidence thin; where the word rules name lingua's best
    language, that is the document's, else it is und unless lingua is confident."""
    from xqa.documents.language import CONFIDENT, identify_text

    scores = {}
    monkeypatch.setattr("xqa.langid.model.model_scores", lambda text: scores["now"])
    german = "Der Eiffelturm ist 330 Meter hoch."
    assert detect_language(german) == "de"
    scores["now"] = [("de", 0.21), ("sv", 0.11)]
    assert identify_text(german) == "de"
    assert identify_text(german, rules_confirm=False) == UNKNOWN
    scores["now"] = [("nl", 0.3), ("de", 0.29)]                  # lingua's best is not the rules'
    assert identify_text(german) == UNKNOWN
    scores["now"] = [("nl", CONFIDENT), ("de", 0.1)]             # confident: lingua decides
    assert identify_text(german) == identify_text(german, rules_confirm=False) == "nl"
    scores["now"] = []                                           # no language lingua knows
    assert identify_text(german) == UNKNOWN
    assert identify_text("東京タワーの高さは333メートルです。") == "ja"   # a script of one language: no lingua


def test_transliterated_names_do_not_make_an_english_paragraph_tagalog():
    """lingua keeps only the languages whose alphabet has every letter it sees: a few names with
    macrons made this English paragraph Tagalog (1.0). Read again without their words, it is the
    English the rules say; a letter most words share (Vietnamese) is never set aside."""
    from xqa.documents.language import common_words, identify_text
    from xqa.langid.model import model_scores, script_letters

    text = ("In Theravada Buddhism there can be no divine salvation or forgiveness for one's karma, since it is a "
            "purely impersonal process that is a part of the makeup of the universe. In Mahayana Buddhism, the "
            "texts of certain Mahayana sutras (such as the Lotus Sutra, the Aṅgulimālīya Sūtra and the Mahāyāna "
            "Mahāparinirvāṇa Sūtra) claim that the recitation or merely the hearing of their texts can expunge "
            "great swathes of negative karma. The Japanese Pure Land teacher Genshin taught that Amitābha has "
            "the power to destroy the karma that would otherwise bind one in saṃsāra.")
    if model_scores("the karma") is None:
        pytest.skip("lingua-language-detector is not installed")
    assert model_scores(script_letters(text, "latin"))[0][0] == "tl"   # what lingua says of it whole
    assert "Sūtra" not in common_words(text) and "karma" in common_words(text)
    assert identify_text(text) == "en"
    vietnamese = ("Hà Nội là thủ đô của nước Cộng hòa xã hội chủ nghĩa Việt Nam, cũng là kinh đô của hầu hết "
                  "các vương triều Việt trước đây. Nằm giữa đồng bằng sông Hồng trù phú, nơi đây đã sớm trở "
                  "thành một trung tâm chính trị, kinh tế và văn hóa ngay từ những buổi đầu của lịch sử.")
    assert identify_text(vietnamese) == "vi"


def test_report_documents_counts_right_unknown_and_wrong_per_length(tmp_path, monkeypatch, capsys):
    import json

    from xqa.cli import main

    monkeypatch.setattr("xqa.langid.model.warm_up", lambda: None)
    # lingua stand-in: sure of English for long texts, unsure of it for short ones
    monkeypatch.setattr("xqa.langid.model.model_scores",
                        lambda text: [("en", 0.9 if len(text) > 40 else 0.3), ("de", 0.05)])
    rows = [{"id": "1", "text": "The tower was completed in 1958 and is 333 metres tall, a landmark.", "lang": "en"},
            {"id": "2", "text": "Der Turm wurde 1958 fertiggestellt und ist 333 Meter hoch, ein Wahrzeichen.",
             "lang": "de"}]
    passages = tmp_path / "p.jsonl"
    passages.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["report", "langid", "--documents", str(passages), "--cuts", "0", "30",
                 "--out", str(tmp_path / "d.md")]) == 0
    table = (tmp_path / "d.md").read_text(encoding="utf-8")
    assert "| whole paragraphs | en | 1 | 100.0 | 0.0 | 0.0 | 100.0 | 0.0 | 0.0 |" in table
    assert "| whole paragraphs | de | 1 | 0.0 | 0.0 | 100.0 | 0.0 | 0.0 | 100.0 |" in table   # lingua wrong
    # 30 characters: lingua unsure of English; the rules confirm it for the English text only
    assert "| first 30 characters | en | 1 | 0.0 | 100.0 | 0.0 | 100.0 | 0.0 | 0.0 |" in table
    assert "| first 30 characters | de | 1 | 0.0 | 100.0 | 0.0 | 0.0 | 100.0 | 0.0 |" in table
    assert "| **first 30 characters, all** | | 2 | 0.0 | 100.0 | 0.0 | 50.0 | 50.0 | 0.0 |" in table


def test_script_languages_are_the_indexes_an_unknown_language_question_reaches():
    from xqa.langid.rules import script_languages

    languages = ["ar", "en", "ja", "ko", "th", "zh"]
    assert script_languages("Quelle est la capitale de l'Australie ?", languages) == ["en"]
    assert script_languages("北京的人口", languages) == ["ja", "zh"]
    assert script_languages("Кто написал?", languages) == []
    assert script_languages("1984", languages) == languages   # no letters: every index
    # passages of no identified language (xqa build --documents) may be in any script
    assert script_languages("Кто написал?", ["en", "und"]) == script_languages("東京", ["und"]) == ["und"]


def test_an_unknown_language_question_also_searches_the_index_of_passages_of_unknown_language(tmp_path):
    """xqa build --documents indexes the passages it could not identify as 'und'; a question of
    unknown language searches that index beside those of its script, not instead of them."""
    from retriever.sparse.searcher import SparseRetriever
    from xqa.records import Question

    indexes = {lang: _FakeIndex(lang, [(f"{lang}-1", score)]) for lang, score in (("en", 2.0), ("th", 9.0),
                                                                                  ("und", 1.0))}
    bm25 = SparseRetriever(tmp_path, {"languages": sorted(indexes)}, indexes, threads=1)
    [hits] = bm25.search([Question(id="q", question="Who wrote it?", lang=UNKNOWN)], k=5)
    assert [h.id for h in hits] == ["en-1", "und-1"]
    [hits] = bm25.search([Question(id="q", question="ใครเขียน", lang=UNKNOWN)], k=5)
    assert [h.id for h in hits] == ["th-1", "und-1"]
