"""Readers and writers: every supported layout, and malformed input named by file:line."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from xqa.errors import InputError, XqaError
from xqa.io import (count_records, passages_dataset, read_passages, read_questions, read_results, read_squad,
                    write_passages, write_results, write_trec_run)
from xqa.records import Context, Passage, Question, RetrievalResult

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_passages_jsonl_pyserini_and_tsv(tmp_path):
    p = _write(tmp_path / "p.jsonl",
               '{"id": "a", "title": "東京", "text": "東京は日本の首都である。", "lang": "ja"}\n\n'
               '{"id": "b", "contents": "Paris\\nParis is the capital of France.", "lang": "en"}\n')
    got = list(read_passages(p))
    assert got == [Passage("a", "東京", "東京は日本の首都である。", "ja"),
                   Passage("b", "Paris", "Paris is the capital of France.", "en")]
    t = _write(tmp_path / "p.tsv", "id\ttext\ttitle\n1\tSome text\tA title\n")
    assert list(read_passages(t, lang="en")) == [Passage("1", "A title", "Some text", "en")]
    crlf = _write(tmp_path / "w.jsonl", '{"id": "d", "contents": "Windows Title\\r\\nWritten on Windows.", "lang": "en"}\n')
    assert list(read_passages(crlf)) == [Passage("d", "Windows Title", "Written on Windows.", "en")]
    with pytest.raises(XqaError, match="language"):
        list(read_passages(t))
    out = tmp_path / "round.jsonl"
    write_passages(out, got)
    assert list(read_passages(out)) == got


def test_dpr_tsv_rows_are_one_line_with_the_columns_the_header_names(tmp_path):
    """A tab in an unquoted text, or a quote never closed, would shift a title or swallow the
    passages after it: an error naming the line, not a passage read wrong."""
    shifted = _write(tmp_path / "tab.tsv", "id\ttext\ttitle\n1\tHamlet is a tragedy.\tSet in Denmark.\tHamlet\n")
    with pytest.raises(InputError, match=r"tab\.tsv:2: expected 3 tab-separated columns \(id, text, title\), "
                                         r"found 4 \(a tab inside a text"):
        list(read_passages(shifted, lang="en"))
    unclosed = _write(tmp_path / "quote.tsv", 'id\ttext\ttitle\n1\t"Never closed.\tT1\n2\tSecond.\tT2\n3\tThird.\tT3\n')
    with pytest.raises(InputError, match=r"quote\.tsv:2: a field opened by a double quote runs on to line 4"):
        list(read_passages(unclosed, lang="en"))
    # a header naming a lang column: each passage its language, no --lang needed; quoted quotes kept
    named = _write(tmp_path / "named.tsv", 'id\ttext\ttitle\tlang\n1\t"A ""quoted"" text"\tT\tfr\n2\tZwei\tT2\tde\n')
    assert list(read_passages(named)) == [Passage("1", "T", 'A "quoted" text', "fr"), Passage("2", "T2", "Zwei", "de")]
    with pytest.raises(InputError, match=r"named2\.tsv:2: field 'lang': unknown language code 'jp'"):
        list(read_passages(_write(tmp_path / "named2.tsv", "id\ttext\ttitle\tlang\n1\tx\tT\tjp\n")))
    with pytest.raises(InputError, match=r"cols\.tsv:1: the header names no column 'title'"):
        list(read_passages(_write(tmp_path / "cols.tsv", "id\ttext\tname\n1\tx\tT\n"), lang="en"))


def test_gzipped_dpr_tsv_is_read_as_tsv_and_counted(tmp_path):
    # DPR ships its passages as psgs_w100.tsv.gz: the format is the name's suffix before .gz
    text = "id\ttext\ttitle\n1\tSome text\tA title\n\n2\tMore text\tB\n"
    plain = _write(tmp_path / "psgs.tsv", text)
    packed = tmp_path / "psgs.tsv.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    want = [Passage("1", "A title", "Some text", "en"), Passage("2", "B", "More text", "en")]
    assert list(read_passages(packed, lang="en")) == list(read_passages(plain, lang="en")) == want
    assert count_records(packed) == count_records(plain) == 2   # the header and blank lines are no records
    jsonl = _write(tmp_path / "p.jsonl", '{"id": "a", "text": "x", "lang": "en"}\n\n{"id": "b", "text": "y", "lang": "en"}\n')
    assert count_records(jsonl) == 2


@pytest.mark.parametrize("content, line, what", [
    ('{"id": "a", "text": "x", "lang": "en"}\n{"id": "b", "text": "y", "lang": "en"\n', 2,
     "invalid JSON (Expecting ',' delimiter at column 38)"),
    ('{"id": "a", "text": "x", "lang": "en"}\r\n{"id": "b", "text":\r\n', 2, "invalid JSON (Expecting value at column 20)"),
    ('{"id": "a", "text": "x, "lang": "en"}\n', 1, "invalid JSON (Expecting ',' delimiter at column 26)"),
    ('{"id": "a", "text": "x}\n', 1, "invalid JSON (Unterminated string starting at column 21)"),
    ('{"id": "a", "text": "x", "lang": "en"}\n\n{"text": "y", "lang": "en"}\n', 3, "missing field 'id'"),
    ('{"id": "a", "text": "x"}\n', 1, "lang"),
    ('["a"]\n{"id": "b", "text": "y", "lang": "en"}\n', 1, "expected a JSON object"),
])
def test_malformed_passage_line_is_named(tmp_path, content, line, what):
    p = _write(tmp_path / "bad.jsonl", content)
    with pytest.raises(InputError) as e:
        list(read_passages(p))
    assert e.value.line == line and f"bad.jsonl:{line}:" in str(e.value) and what in str(e.value)


@pytest.mark.parametrize("content", ['{"version": "1.1", "data": []}\n', '{\n  "data": []\n}\n', '["a"]\n'])
def test_a_json_document_given_as_passages_is_said_to_be_one(tmp_path, content):
    """A SQuAD file or a JSON list is no passage file: said as such, not as its first line's
    missing 'id' or invalid JSON."""
    with pytest.raises(InputError, match=r"bad.json: one JSON document .*not passages: passages are JSONL"):
        list(read_passages(_write(tmp_path / "bad.json", content)))


def test_a_blank_passage_text_is_named_by_line_where_text_is_required(tmp_path):
    """xqa build refuses a passage with nothing in it; the error names the file and line, in JSONL
    (blank lines skipped, so line and record differ) and in DPR TSV."""
    p = _write(tmp_path / "p.jsonl",
               '{"id": "a", "text": "x", "lang": "en"}\n\n{"id": "b", "text": " ", "lang": "en"}\n')
    assert [q.id for q in read_passages(p)] == ["a", "b"]          # readers that index anything keep it
    with pytest.raises(InputError, match=r"p\.jsonl:3: passage 'b' has an empty text"):
        list(read_passages(p, text_required=True))
    t = _write(tmp_path / "p.tsv", "id\ttext\ttitle\n1\tSome text\tA\n2\t\tB\n")
    with pytest.raises(InputError, match=r"p\.tsv:3: passage '2' has an empty text"):
        list(read_passages(t, lang="en", text_required=True))


def test_xor_jsonl_questions_and_bad_answers(tmp_path):
    q = _write(tmp_path / "q.jsonl",
               '{"id": "1", "question": "日本の首都は？", "answers": ["東京"], "answers_en": ["Tokyo"], '
               '"lang": "ja", "split": "dev"}\n')
    [got] = read_questions(q)
    assert got.answers == ("東京",) and got.answers_en == ("Tokyo",) and got.meta == {"split": "dev"}
    assert got.to_dict()["split"] == "dev"
    bad = _write(tmp_path / "bad.jsonl", '{"id": "1", "question": "q", "answers": [3], "lang": "en"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: field 'answers': answer 0 \(3\)"):
        read_questions(bad)
    # a known code in capitals or with a hyphen is read as xqa writes it; a question's and a passage's
    upper = _write(tmp_path / "upper.jsonl", '{"id": "1", "question": "q", "answers": ["a"], "lang": "EN"}\n'
                                             '{"id": "2", "question": "q", "answers": ["a"], "lang": "zh-CN"}\n')
    assert [x.lang for x in read_questions(upper)] == ["en", "zh_cn"]
    ps = _write(tmp_path / "p.jsonl", '{"id": "p", "title": "t", "text": "x", "lang": "DE"}\n')
    assert [p.lang for p in read_passages(ps)] == ["de"]


def test_a_compressed_copy_numbers_its_questions_as_the_file_does(tmp_path):
    """NQ-open records have no id: they are numbered by file name, the same for a .gz copy."""
    import gzip

    plain = tmp_path / "NQ-open.dev.jsonl"
    plain.write_text('{"question": "who?", "answer": ["a"]}\n{"question": "when?", "answer": ["b"]}\n')
    packed = tmp_path / "copy" / "NQ-open.dev.jsonl.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert [q.id for q in read_questions(plain)] == [q.id for q in read_questions(packed)] == \
        ["NQ-open.dev:1", "NQ-open.dev:2"]


def test_a_compressed_squad_file_gives_its_language_by_name_as_the_plain_one(tmp_path):
    """MLQA's and XQuAD's file names say the questions' language; gzipped, they still do."""
    import gzip

    squad = {"version": "1", "data": [{"title": "T", "paragraphs": [{"context": "Berlin ist groß.", "qas": [
        {"id": "a1", "question": "Was ist groß?", "answers": [{"text": "Berlin", "answer_start": 0}]}]}]}]}
    for name in ("dev-context-en-question-de.json.gz", "xquad.de.json.gz"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(json.dumps(squad).encode()))
        assert [q.lang for q in read_questions(path)] == ["de"], name


def test_dpr_question_tsv_and_plain_text_questions(tmp_path):
    """DPR's nq-test.qa.csv layout (question, tab, a Python list of answers; read as DPR reads it,
    tab-separated CSV) and a text file of one question a line, each id'd by its line."""
    qa = _write(tmp_path / "nq-test.qa.csv",
                "who got the first nobel prize in physics\t['Wilhelm Conrad Röntgen']\n"
                "\n"
                'who sang "it\'s raining men"\t["The Weather Girls", \'Geri Halliwell\']\n'
                '"""Weird Al"" Yankovic parodied which song?"\t[]\n')
    got = read_questions(qa)
    assert [(q.id, q.question, q.answers, q.lang) for q in got] == [
        ("nq-test.qa:1", "who got the first nobel prize in physics", ("Wilhelm Conrad Röntgen",), "en"),
        ("nq-test.qa:3", 'who sang "it\'s raining men"', ("The Weather Girls", "Geri Halliwell"), "en"),
        ("nq-test.qa:4", '"Weird Al" Yankovic parodied which song?', (), "en")]
    assert {q.lang for q in read_questions(qa, lang="de")} == {"de"}
    for text, line, why in (("q\tShakespeare\n", 1, r"the answers \(Shakespeare\) are not a list such as"),
                            ("q\t[1, 2]\n", 1, r"the answers \(\[1, 2\]\) are not a list of strings"),
                            ("ok\t['a']\nno tab here\n", 2, r"expected a question, a tab and its answers"),
                            ("\t['a']\n", 1, r"the question is empty"),
                            ("who\t['a']\t7\n", 1, r"found 3 tab-separated columns \(a tab inside a question"),
                            ('"who sang\t[\'a\']\nwhat\t[\'b\']\n', 1,
                             r"a field opened by a double quote runs on to line 2")):
        with pytest.raises(InputError, match=rf"bad\.tsv:{line}: .*{why}"):
            read_questions(_write(tmp_path / "bad.tsv", text))
    with pytest.raises(InputError, match=r"sheet\.csv:1: .*found no tab \(a \.csv question file is read as DPR's"):
        read_questions(_write(tmp_path / "sheet.csv", "Who wrote Hamlet?,Shakespeare\n"))   # a spreadsheet's
    lines = _write(tmp_path / "mine.txt", "Who wrote Hamlet?\n\n  Wo liegt Berlin?  \n")
    with pytest.raises(InputError, match=r"mine\.txt: a text file of questions says nothing of their language: "
                                         r"pass --lang \(or --lang auto"):
        read_questions(lines)
    assert [(q.id, q.question, q.lang, q.answers) for q in read_questions(lines, lang="de")] == [
        ("mine:1", "Who wrote Hamlet?", "de", ()), ("mine:3", "Wo liegt Berlin?", "de", ())]
    assert {q.lang for q in read_questions(lines, lang="auto", auto=True)} == {"auto"}
    with pytest.raises(XqaError, match=r"lang 'auto' leaves each question's language to identify: pass auto=True"):
        read_questions(lines, lang="auto")   # from Python: the way to identify them is said
    # "squad" in a file's name guesses English, but --lang auto asks for each question's language
    squad = _write(tmp_path / "my_squad.json", json.dumps({"data": [{"title": "T", "paragraphs": [
        {"context": "Berlin liegt an der Spree.", "qas": [{"id": "q1", "question": "Woran liegt Berlin?",
                                                          "answers": [{"text": "Spree", "answer_start": 20}]}]}]}]}))
    assert {q.lang for q in read_questions(squad)} == {"en"}
    assert {q.lang for q in read_questions(squad, lang="auto", auto=True)} == {"auto"}
    # SQuAD's layout in another language is not English by its name: JSQuAD, SQuAD-it, SQuAD-es
    for folder, name in (("jsquad_ja", "valid.json"), ("squad_it", "SQuAD_it-test.json"), ("SQuAD-es-v1.1", "dev.json")):
        (tmp_path / folder).mkdir()
        other = _write(tmp_path / folder / name, squad.read_text(encoding="utf-8"))
        with pytest.raises(XqaError, match=r"cannot tell the language from the file name; pass --lang"):
            read_questions(other)
        assert {q.lang for q in read_questions(other, lang="ja")} == {"ja"}


def test_empty_question_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match=r"e.jsonl: the file is empty"):
        read_questions(_write(tmp_path / "e.jsonl", ""))
    with pytest.raises(XqaError, match=r"is a folder; name the question files in it \(.*/\*\.jsonl\)"):
        read_questions(tmp_path)
    with pytest.raises(XqaError, match=r"none\.jsonl: no such question file"):
        read_questions(tmp_path / "none.jsonl")


def test_results_round_trip_and_trec(tmp_path):
    q = Question("q1", "who?", "en", answers=("x",))
    r = RetrievalResult(q, (Context("p1", "T", "x is here", "en", 2.0, "dense"),
                            Context("p2", "U", "nothing", "de", 1.0, "sparse")))
    for name in ("r.json", "r.jsonl", "r.json.gz", "r.jsonl.gz"):   # a .gz name: gzip'd, as read
        write_results(tmp_path / name, [r])
        assert read_results(tmp_path / name) == [r]
    assert (tmp_path / "r.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress((tmp_path / "r.json.gz").read_bytes()).startswith(b"[")   # .json.gz: a JSON list
    write_passages(tmp_path / "p.jsonl.gz", [Passage("p1", "T", "x is here", "en")])
    assert [p.id for p in read_passages(tmp_path / "p.jsonl.gz")] == ["p1"]
    plain = tmp_path / "plain.jsonl.gz"   # a file named .gz that is not gzip'd: said, not a gzip traceback
    plain.write_bytes((tmp_path / "r.jsonl").read_bytes())
    with pytest.raises(InputError, match=r"plain\.jsonl\.gz: named \.gz, but not gzip-compressed"):
        read_results(plain)
    write_trec_run(tmp_path / "run.trec", [r])
    assert (tmp_path / "run.trec").read_text().splitlines() == [
        "q1 Q0 p1 1 2.0 xqa", "q1 Q0 p2 2 1.0 xqa"]
    # two scores six decimals cannot tell apart stay apart (trec_eval ranks by score)
    close = RetrievalResult(q, (Context("p1", "T", "x", "en", -0.6503947137, "hybrid"),
                                  Context("p2", "U", "y", "en", -0.6503948474, "hybrid")))
    write_trec_run(tmp_path / "close.trec", [close])
    scores = [float(line.split()[4]) for line in (tmp_path / "close.trec").read_text().splitlines()]
    assert scores == [-0.6503947137, -0.6503948474]
    # an id with a space would split into two fields: refused, the file left unwritten
    spaced = RetrievalResult(Question("q 2", "who?", "en"), r.ctxs)
    with pytest.raises(XqaError, match=r"--trec: question id 'q 2' is empty or holds whitespace"):
        write_trec_run(tmp_path / "spaced.trec", [r, spaced])
    assert not (tmp_path / "spaced.trec").exists()
    bad = _write(tmp_path / "bad.jsonl", '{"id": "q", "question": "x", "lang": "en"}\n')
    with pytest.raises(InputError, match="ctxs"):
        read_results(bad)


def test_passages_through_datasets(tmp_path, monkeypatch):
    p = _write(tmp_path / "p.jsonl", "".join(
        json.dumps({"id": str(i), "title": "t", "text": f"text {i}", "lang": "en"}) + "\n" for i in range(5)))
    ds = passages_dataset(p, cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 5 and ds[3]["text"] == "text 3"


@pytest.mark.parametrize("name,content,lang", [
    ("pyserini.jsonl", '{"id": "a", "contents": "Paris\\nParis is the capital.", "lang": "fr"}\n'
                       '{"id": "b", "contents": "no title here", "lang": "fr"}\n', None),
    ("dpr.tsv", "id\ttext\ttitle\na\tParis is the capital.\tParis\nb\tno title here\t\n", "fr"),
])
def test_the_arrow_passage_store_reads_every_layout_the_dict_store_reads(tmp_path, name, content, lang):
    from xqa.pipeline import PassageStore

    path = _write(tmp_path / name, content)
    small = PassageStore.open(path, lang=lang)
    large = PassageStore.open(path, in_memory_limit=1, lang=lang)   # more passages than the limit: Arrow
    assert small._dict is not None and large._dict is None
    assert list(large) == list(small) == [Passage("a", "Paris", "Paris is the capital.", "fr"),
                                          Passage("b", "", "no title here", "fr")]
    for store in (small, large):
        with pytest.raises(XqaError, match="'c' is in an index but not in the passage file"):
            store.get("c")


def test_the_arrow_passage_store_reads_a_changed_file_again(tmp_path):
    path = _write(tmp_path / "p.jsonl", '{"id": "a", "text": "old", "lang": "en"}\n')
    assert passages_dataset(path, cache_dir=str(tmp_path / "c"))[0]["text"] == "old"
    _write(path, '{"id": "a", "text": "new text", "lang": "en"}\n')
    assert passages_dataset(path, cache_dir=str(tmp_path / "c"))[0]["text"] == "new text"
    _write(path, '{"id": "a", "lang": "en"}\n')
    with pytest.raises(InputError, match="missing field 'text'"):
        passages_dataset(path, cache_dir=str(tmp_path / "c"))


@pytest.mark.skipif(not (DATA / "mlqa").is_dir(), reason="../shared/data/mlqa absent")
def test_real_sets_load():
    qs, ps = read_squad(DATA / "mlqa/dev/dev-context-de-question-en.json")
    assert qs[0].lang == "en" and ps[0].lang == "de"
    ids = {p.id for p in ps}
    assert all(q.meta["positive_ids"][0] in ids for q in qs)
    ko = read_questions(DATA / "tydiqa_goldp_train_en_ko_sw/tydiqa.goldp.ko.train.json")
    assert len(ko) == 1625 and ko[0].lang == "ko"
    assert len({q.id for q in ko}) == 1625 and ko[0].id == "tydiqa.goldp.ko.train:0:0:0"  # ids numbered per paragraph
    nq = read_questions(DATA / "nq_open/NQ-open.dev.jsonl")
    assert len(nq) == 3610 and nq[0].answers
    mia = read_questions(DATA / "mia2022_test_questions/mia_2022_test_xorqa_without_answers.jsonl")
    assert len(mia) == 6048 and {q.lang for q in mia} == {"ar", "bn", "fi", "ja", "ko", "ru", "te"}
    eq = read_questions(DATA / "entityquestions/dev/P36.dev.json")
    assert eq and eq[0].answers
