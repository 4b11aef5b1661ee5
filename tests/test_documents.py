"""Documents in (xqa.documents): reading each format, language per document, the packed and
MIA split rules (the MIA rule checked against a plain implementation of ../shared/DESIGN.md's
wording on 1,000 WikiExtractor-style articles of the shipped corpus), provenance, bad files,
resuming; and the guide's "Your documents" section run end to end (slow)."""
from __future__ import annotations

import gzip
import json
import os
import random
import re
import shlex
from collections import defaultdict
from pathlib import Path

import pytest

from xqa.documents.collect import Collector, report_path, write_passages
from xqa.documents.formats import format_of, read_file
from xqa.documents.provenance import describe, link
from xqa.documents.split import MiaSplit, PackedSplit, e5_tokenizer, make_split
from xqa.errors import XqaError

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "data" / "documents"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tokenizer(converted_e5):
    return e5_tokenizer(converted_e5)


# ----------------------------------------------------------------------------- reading


def test_the_committed_folder_reads_in_every_format_with_titles_languages_and_pages(tmp_path, tokenizer):
    out = tmp_path / "passages.jsonl"
    report = write_passages(FOLDER, out, PackedSplit(tokenizer), log=lambda s: None)
    rows = _rows(out)
    by_file = defaultdict(list)
    for r in rows:
        by_file[r["meta"]["source"]].append(r)
    assert set(by_file) == {"berichte/wikipedia-auszuege.pdf", "olympic-council-of-asia.html", "enzyme-ja.md",
                            "thai-curry.txt", "zh/blood-pressure.txt.gz", "wikiextractor/AA/wiki_00"}
    # titles from the PDF's metadata, <title>, the first heading, the Wikipedia title, the file name
    assert {r["title"] for r in by_file["berichte/wikipedia-auszuege.pdf"]} == {
        "Auszüge aus der deutschsprachigen Wikipedia"}
    assert by_file["olympic-council-of-asia.html"][0]["title"] == "Olympic Council of Asia"
    assert by_file["enzyme-ja.md"][0]["title"] == "酵素"
    assert by_file["zh/blood-pressure.txt.gz"][0]["title"] == "blood-pressure"
    assert [r["title"] for r in by_file["wikiextractor/AA/wiki_00"]] == ["Analizador sintáctico LL",
                                                                        "Demographics of Israel"]
    # languages identified per document: a Thai text quoting Japanese katakana stays Thai
    langs = defaultdict(set)
    for r in rows:
        langs[r["meta"]["source"]].add(r["lang"])
    assert langs == {"berichte/wikipedia-auszuege.pdf": {"de"}, "olympic-council-of-asia.html": {"en"},
                     "enzyme-ja.md": {"ja"}, "thai-curry.txt": {"th"}, "zh/blood-pressure.txt.gz": {"zh"},
                     "wikiextractor/AA/wiki_00": {"es", "en"}}
    # one page, one passage here: each page's paragraph is its own passage, with its page number
    pdf = by_file["berichte/wikipedia-auszuege.pdf"]
    assert [r["meta"]["page"] for r in pdf] == [1, 2, 3]
    assert "Juden" in pdf[1]["text"] and "75,6" in pdf[1]["text"]
    # HTML: the main text only, not the navigation, script or footer; the heading is the title
    html = " ".join(r["text"] for r in by_file["olympic-council-of-asia.html"])
    assert "governing body" in html and not re.search(r"Home|navigation|Sports|CC BY-SA", html)
    # WikiExtractor: each article's address
    assert by_file["wikiextractor/AA/wiki_00"][0]["meta"]["url"] == "https://es.wikipedia.org/wiki?curid=1001"
    # offsets point into the document's text: a .txt file's text is the file's
    thai = (FOLDER / "thai-curry.txt").read_text(encoding="utf-8")
    for r in by_file["thai-curry.txt"]:
        assert thai[r["meta"]["start"]: r["meta"]["end"]].strip() == r["text"]
    # the report: files read and skipped (NOTICE is no document), passages per language
    assert report_path(out).is_file() and json.loads(report_path(out).read_text()) == report
    assert report["files"] == {"found": 7, "read": 6, "skipped": 1}
    assert report["skipped"][0]["file"] == "NOTICE" and "not a document format" in report["skipped"][0]["reason"]
    assert sum(report["passages_per_language"].values()) == len(rows) == report["passages"]
    assert report["mixed"]["count"] == 0 and report["unknown"]["count"] == 0


def test_formats_by_name():
    assert [format_of(Path(n)) for n in ("a.TXT", "b.md", "c.htm", "d.pdf.gz", "AA/wiki_07", "wiki_07.bz2",
                                         "e.jsonl", "f.docx", "g.png", "NOTICE")] == [
        "txt", "md", "html", "pdf", "wiki", "wiki", "wiki", "docx", None, None]


def test_documents_whose_names_differ_get_different_passage_ids_and_runs_different_reports(tmp_path):
    """White space in a path is percent-encoded in the id (an id is one token in FAISS's ids.txt and
    TREC runs): "a b.txt" and "a_b.txt" must not share "a_b.txt#1", or the build stops later on a
    duplicate id in a file it wrote itself."""
    docs = tmp_path / "docs"
    (docs / "my docs").mkdir(parents=True)
    (docs / "my_docs").mkdir()
    text = "The lighthouse of Alexandria was one of the Seven Wonders of the Ancient World. " * 4
    for name in ("a b.txt", "a_b.txt", "100%.txt", "100%25.txt", "my docs/x.txt", "my_docs/x.txt"):
        (docs / name).write_text(text, encoding="utf-8")
    out = tmp_path / "run.v1.jsonl"
    write_passages(docs, out, MiaSplit(), log=lambda s: None)
    ids = [r["id"] for r in _rows(out)]
    assert len(ids) == len(set(ids)) == 6 and not any(ch.isspace() for i in ids for ch in i)
    assert {"a%20b.txt#1", "a_b.txt#1", "100%25.txt#1", "100%2525.txt#1", "my%20docs/x.txt#1"} <= set(ids)
    assert report_path(out) == tmp_path / "run.v1-report.json" and report_path(out).is_file()
    assert report_path(tmp_path / "run.v2.jsonl.gz") == tmp_path / "run.v2-report.json"
    assert report_path(tmp_path / "passages.jsonl") == tmp_path / "passages-report.json"


def test_a_short_bilingual_note_is_mixed_and_each_passage_gets_its_language(tmp_path, tokenizer):
    """A text shorter than two samples is told by its paragraphs: an English and a German one
    make it mixed (its passages one language each); a short heading does not."""
    from xqa.documents.language import MIXED, document_language

    en = "The Olympic Council of Asia has its headquarters in Kuwait City and organises the Asian Games."
    de = "Der Olympische Rat Asiens hat seinen Sitz in Kuwait-Stadt und richtet die Asienspiele aus."
    assert len(f"{en}\n\n{de}") < 400
    assert document_language(f"{en}\n\n{de}\n") == MIXED
    assert document_language(f"Kuwait\n\n{en}\n\n{en}\n") == "en"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.txt").write_text(f"{en}\n\n{de}\n", encoding="utf-8")
    out = tmp_path / "p.jsonl"
    report = write_passages(docs, out, PackedSplit(tokenizer), log=lambda s: None)
    assert report["mixed"] == {"count": 1, "documents": ["note.txt"]}
    assert sorted(r["lang"] for r in _rows(out)) == ["de", "en"]


def test_lang_forces_every_documents_language(tmp_path):
    out = tmp_path / "p.jsonl"
    report = write_passages(FOLDER / "thai-curry.txt", out, MiaSplit(), lang="th", log=lambda s: None)
    assert report["documents_per_language"] == {"th": 1} and {r["lang"] for r in _rows(out)} == {"th"}
    with pytest.raises(XqaError, match="unknown language code"):
        write_passages(FOLDER, out, MiaSplit(), lang="xx")


def test_mixed_and_unknown_documents_are_reported(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    en = ("The Olympic Council of Asia is a governing body of sports in Asia, currently with 45 member nations. "
          "Its headquarters are in Kuwait City, and it organises the Asian Games every four years. ") * 3
    de = ("Der Olympische Rat Asiens ist der Dachverband der Nationalen Olympischen Komitees Asiens. Sein Sitz "
          "ist in Kuwait-Stadt, und er richtet alle vier Jahre die Asienspiele aus, zuletzt in China. ") * 3
    (docs / "mixed.txt").write_text(f"{en}\n\n{de}\n\n{de}\n", encoding="utf-8")
    (docs / "numbers.txt").write_text(" ".join(str(n) for n in range(400)) + "\n", encoding="utf-8")
    out = tmp_path / "p.jsonl"
    report = write_passages(docs, out, MiaSplit(), log=lambda s: None)
    assert report["mixed"] == {"count": 1, "documents": ["mixed.txt"]}
    assert report["unknown"] == {"count": 1, "documents": ["numbers.txt"]}
    langs = {r["id"]: r["lang"] for r in _rows(out)}
    assert langs["mixed.txt#1"] == "en" and langs["mixed.txt#3"] == "de"   # each passage its own language
    assert {v for k, v in langs.items() if k.startswith("numbers")} == {"und"}


def test_a_mixed_document_packs_no_passage_across_two_languages(tmp_path, tokenizer):
    """Short paragraphs that would fit one packed passage, in two languages: one passage per
    language run, each in its language (one of both, labelled by one, would be searched by the
    other language's BM25); a heading not identified joins its run; offsets stay the document's."""
    docs = tmp_path / "docs"
    docs.mkdir()
    en = ["The Kemmerfield Observatory houses a large telescope named Hortensia, which was installed in the "
          "spring after years of planning by the town council and a group of amateur astronomers.",
          "The observatory is open to visitors every Friday evening, when volunteers show the rings of Saturn, "
          "the moons of Jupiter and, on clear winter nights, the great nebula in Orion.",
          "Its library keeps the logbooks of every night the telescope was used since it opened."]
    de = ["Das Observatorium wurde im Jahr 1954 von der Stadt Kemmerfield gebaut und gehört heute zu den "
          "beliebtesten Ausflugszielen der ganzen Region, besonders im Sommer.",
          "Jeden Freitagabend zeigen ehrenamtliche Helfer den Besuchern die Ringe des Saturn und die Monde des "
          "Jupiter, und im Winter kann man bei klarem Himmel den großen Orionnebel sehen.",
          "In der Bibliothek liegen die Beobachtungsbücher aller Nächte seit der Eröffnung."]
    text = "\n\n".join(["1954", *en, *de]) + "\n"
    (docs / "mix.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "p.jsonl"
    report = write_passages(docs, out, PackedSplit(tokenizer), log=lambda s: None)
    assert report["mixed"]["count"] == 1
    rows = _rows(out)
    assert [r["lang"] for r in rows] == ["en", "de"]
    assert rows[0]["text"] == "\n\n".join(["1954", *en]) and rows[1]["text"] == "\n\n".join(de)
    assert [text[r["meta"]["start"]:r["meta"]["end"]] for r in rows] == [r["text"] for r in rows]


def test_a_folder_without_documents_is_said_before_anything_is_built_and_leaves_nothing(tmp_path, capsys):
    from xqa.cli import main

    docs = tmp_path / "docs"
    (docs / ".hidden").mkdir(parents=True)
    (docs / ".hidden" / "a.txt").write_text("hidden, so left out")
    out = tmp_path / "build"
    assert main(["build", "--documents", str(docs), "--out", str(out)]) == 1
    assert f"--documents {docs}: holds no documents" in capsys.readouterr().err and not out.exists()
    (docs / "empty.txt").write_text("")
    with pytest.raises(XqaError, match=r"no passages from its 1 file: 1 skipped \(empty.txt: empty"):
        write_passages(docs, tmp_path / "p.jsonl", MiaSplit(), log=lambda s: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]   # no partial passage file, no progress


# ----------------------------------------------------------------------------- splitting


def _doc(text: str, pages=()):
    from xqa.documents.formats import Document

    return Document(id="d", source="d.txt", title="t", text=text, format="txt", pages=pages)


def test_packed_passages_fit_the_token_budget_keep_paragraphs_whole_and_overlap_inside_long_ones(tokenizer):
    short = ["Kurzer Absatz Nummer %d über Kuwait-Stadt." % i for i in range(6)]
    long = " ".join(f"word{i}" for i in range(400))
    text = "\n\n".join(short[:3] + [long] + short[3:])
    rule = PackedSplit(tokenizer, max_tokens=48, overlap=8)
    pieces = rule.split(_doc(text), "de")
    counts = [len(tokenizer.encode(p.text, add_special_tokens=False).ids) for p in pieces]
    assert max(counts) <= 48
    assert pieces[0].text == "\n\n".join(short[:3])                    # whole paragraphs packed together
    assert pieces[-1].text == "\n\n".join(short[3:])
    windows = [p for p in pieces if "word" in p.text]
    assert len(windows) > 3 and windows[0].text.startswith("word0 ") and windows[-1].text.endswith("word399")
    for a, b in zip(windows, windows[1:]):
        assert b.start < a.end                                        # consecutive windows share text
        assert text[b.start - 1] == " " and text[a.end] == " "         # and are cut between words
    for p in pieces:
        assert text[p.start: p.end] == p.text
    # a page break ends a passage (PDF)
    two = "Seite eins.\n\nSeite zwei."
    assert [p.text for p in rule.split(_doc(two, pages=((0, 1), (13, 2))), "de")] == ["Seite eins.", "Seite zwei."]


def test_split_settings_are_checked():
    with pytest.raises(XqaError, match="overlap"):
        make_split("packed", max_tokens=64, overlap=40)
    with pytest.raises(XqaError, match="choose one of"):
        make_split("sentences")


def _mia_rule(text: str, lang: str) -> list[str]:
    """../shared/DESIGN.md's MIA rule as it reads, for whitespace languages and Thai."""
    paragraphs = [p for p in text.split("\n") if p.strip()]
    if lang == "th":
        from pythainlp.tokenize import word_tokenize

        tokens = [t for p in paragraphs for t in word_tokenize(p, engine="newmm")]
    else:
        tokens = " ".join(paragraphs).split()
    if len(tokens) < 20:
        return []
    out = []
    for i in range(0, len(tokens), 100):
        chunk = tokens[i:i + 100]
        if len(chunk) == 100:
            out.append(("" if lang == "th" else " ").join(chunk))
        elif len(chunk) > 20:
            out.append(" ".join(chunk))
    return out


def wikiextractor_sample(folder: Path, n: int = 1000) -> dict[str, list[dict]]:
    """``n`` articles of the shipped corpus in whitespace languages and Thai, rebuilt from their
    paragraphs (grouped by title), written as WikiExtractor --json files, one per language:
    ``{lang: [article, ...]}``."""
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    articles: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows:
        if r["lang"] not in ("ja", "zh") and r["title"]:
            articles[(r["lang"], r["title"])].extend(p for p in r["text"].split("\n") if p.strip())
    keys = sorted(random.Random(0).sample(sorted(articles), n))
    assert len(keys) == n
    out: dict[str, list[dict]] = defaultdict(list)
    for i, (lang, title) in enumerate(keys):
        out[lang].append({"id": str(i), "revid": "1", "url": f"https://{lang}.wikipedia.org/wiki?curid={i}",
                          "title": title, "text": "\n".join(articles[(lang, title)])})
    for lang, arts in out.items():
        (folder / lang).mkdir(parents=True)
        (folder / lang / "wiki_00").write_text(
            "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in arts), encoding="utf-8")
    return out


def test_the_mia_preset_gives_the_rules_passages_on_1000_wikiextractor_articles(tmp_path):
    sample = wikiextractor_sample(tmp_path / "dump")
    assert "th" in sample and "en" in sample and len(sample) >= 6
    expected_total = 0
    for lang, arts in sample.items():
        out = tmp_path / f"{lang}.jsonl"
        report = write_passages(tmp_path / "dump" / lang, out, MiaSplit(), lang=lang, log=lambda s: None)
        got = defaultdict(list)
        for r in _rows(out):
            got[r["meta"]["doc"]].append(r)
        for a in arts:
            want = _mia_rule(a["text"], lang)
            mine = got.get(f"{lang}wiki-{a['id']}", [])
            assert [r["text"] for r in mine] == want, (lang, a["title"])
            assert all(r["title"] == a["title"].strip() and r["meta"]["url"] == a["url"] for r in mine)
            for r in mine:   # the offsets cover the passage's words in the article
                span = a["text"][r["meta"]["start"]: r["meta"]["end"]]
                assert (re.sub(r"\s", "", span) == re.sub(r"\s", "", r["text"]))
            expected_total += len(want)
        assert report["too_short"] == sum(not _mia_rule(a["text"], lang) for a in arts)
    assert expected_total > 1000


def test_mia_japanese_and_chinese_words(tmp_path):
    rule = MiaSplit()
    ja = "東京都は日本の首都である。" * 30
    pieces = rule.split(_doc(ja), "ja")
    assert len(pieces) >= 2 and " " not in pieces[0].text            # a full Japanese passage: joined with ""
    zh = "高血压是全世界过早死亡最重要的可预防因素。" * 30
    pieces = rule.split(_doc(zh), "zh")
    assert len(pieces) >= 2 and pieces[0].text == zh[pieces[0].start: pieces[0].end]


# ----------------------------------------------------------------------------- bad input, resuming


def _bad_folder(folder: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    folder.mkdir()
    (folder / "a-empty.txt").write_bytes(b"")
    (folder / "b-latin1.txt").write_bytes("Größe und Maß\n".encode("latin-1"))
    (folder / "c-good.txt").write_text("Kuwait-Stadt ist der Sitz des Olympischen Rates Asiens. " * 5,
                                       encoding="utf-8")
    pdf = PdfReader(FOLDER / "berichte" / "wikipedia-auszuege.pdf")
    w = PdfWriter()
    w.add_page(pdf.pages[0])
    w.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    with open(folder / "d-encrypted.pdf", "wb") as f:
        w.write(f)
    w = PdfWriter()
    w.add_blank_page(width=595, height=842)
    with open(folder / "e-scanned.pdf", "wb") as f:
        w.write(f)
    w = PdfWriter()
    w.add_page(pdf.pages[1])
    w.add_blank_page(width=595, height=842)
    with open(folder / "f-half.pdf", "wb") as f:
        w.write(f)
    (folder / "g-broken.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    (folder / "h-bad.jsonl").write_text('{"id": "1", "title": "A", "text": "' + "Wort " * 30 + '"}\n{oops\n',
                                        encoding="utf-8")


def test_bad_files_are_reported_by_name_and_page_and_strict_stops_at_the_first(tmp_path):
    docs = tmp_path / "docs"
    _bad_folder(docs)
    out = tmp_path / "p.jsonl"
    said = []
    report = write_passages(docs, out, MiaSplit(), lang="de", log=said.append)
    reasons = {(s["file"], s.get("page"), s.get("line")): s["reason"] for s in report["skipped"]}
    assert "empty" in reasons[("a-empty.txt", None, None)]
    assert "unknown encoding" in reasons[("b-latin1.txt", None, None)]
    assert "encrypted" in reasons[("d-encrypted.pdf", None, None)]
    assert "no text layer" in reasons[("e-scanned.pdf", None, None)]
    assert "not a readable PDF" in reasons[("g-broken.pdf", None, None)]
    assert "not a WikiExtractor" in reasons[("h-bad.jsonl", None, 2)]
    assert report["warnings"] == [{"file": "f-half.pdf", "page": 2,
                                   "reason": "no text layer on this page (scanned? it is left out)"}]
    assert report["files"] == {"found": 8, "read": 3, "skipped": 5} and report["records_skipped"] == 1
    assert any("e-scanned.pdf" in s for s in said) and any("f-half.pdf page 2" in s for s in said)
    assert {r["meta"]["source"] for r in _rows(out)} == {"c-good.txt", "f-half.pdf", "h-bad.jsonl"}
    # --strict: the first problem stops the run; no passage file appears
    strict_out = tmp_path / "strict.jsonl"
    with pytest.raises(XqaError, match=r"a-empty\.txt: empty.*--strict"):
        write_passages(docs, strict_out, MiaSplit(), lang="de", strict=True, log=lambda s: None)
    assert not strict_out.exists()
    (docs / "a-empty.txt").unlink()
    (docs / "b-latin1.txt").unlink()
    (docs / "d-encrypted.pdf").unlink()
    (docs / "e-scanned.pdf").unlink()
    with pytest.raises(XqaError, match=r"f-half\.pdf page 2: no text layer"):
        write_passages(docs, strict_out, MiaSplit(), lang="de", strict=True, log=lambda s: None)


def test_nothing_under_the_folder_is_left_out_unsaid(tmp_path, capfd):
    """A linked folder is read (once, where a link leads back); hidden files and folders are
    named in the report; a JSON file that is no WikiExtractor output is one skipped file, so found =
    read + skipped; a document too short for a passage is named; pypdf prints no line of its own."""
    docs, shared = tmp_path / "docs", tmp_path / "shared"
    (docs / "sub").mkdir(parents=True)
    (docs / ".drafts").mkdir()
    shared.mkdir()
    long = "Kuwait-Stadt ist der Sitz des Olympischen Rates Asiens und seiner Verwaltung. " * 5
    (shared / "rhine.txt").write_text(long.replace("Kuwait", "Basel"), encoding="utf-8")
    (docs / "a.txt").write_text(long, encoding="utf-8")
    (docs / ".drafts" / "draft.txt").write_text(long, encoding="utf-8")
    (docs / ".notes.txt").write_text(long, encoding="utf-8")
    (docs / "linked").symlink_to(shared, target_is_directory=True)
    (docs / "sub" / "loop").symlink_to(docs, target_is_directory=True)   # back to the top: read once
    (docs / "package.json").write_text('{\n  "name": "x",\n  "version": "1.0"\n}\n', encoding="utf-8")
    (docs / "short.txt").write_text("Tokyo Tower is 333 metres tall.", encoding="utf-8")
    good = (FOLDER / "berichte" / "wikipedia-auszuege.pdf").read_bytes()
    (docs / "truncated.pdf").write_bytes(good[:900])
    said = []
    report = write_passages(docs, tmp_path / "p.jsonl", MiaSplit(), lang="de", log=said.append)
    assert sorted(r["meta"]["source"] for r in _rows(tmp_path / "p.jsonl")) == ["a.txt", "linked/rhine.txt"]
    assert report["hidden"] == [".drafts/", ".notes.txt"] and any(".drafts/" in s for s in said)
    assert {s["file"]: s["reason"] for s in report["skipped"]}["package.json"].startswith(
        "not WikiExtractor --json output (line 1")
    assert report["files"] == {"found": 5, "read": 3, "skipped": 2} and report["records_skipped"] == 0
    assert report["too_short"] == 1 and len(report["too_short_documents"]) == 1
    assert any(f"skipped {report['too_short_documents'][0]}: too short for a passage" in s for s in said)
    assert "EOF marker" not in capfd.readouterr().err


def test_a_resumed_run_says_a_documents_page_warnings_once(tmp_path):
    docs = tmp_path / "docs"
    _bad_folder(docs)
    for name in ("a-empty.txt", "b-latin1.txt", "d-encrypted.pdf", "e-scanned.pdf", "g-broken.pdf", "h-bad.jsonl"):
        (docs / name).unlink()
    (docs / "z.txt").write_text("Kuwait-Stadt ist der Sitz des Olympischen Rates Asiens. " * 5, encoding="utf-8")
    out = tmp_path / "p.jsonl"

    class StoppedInside(Collector):   # stopped after f-half.pdf's passages were saved, before its end was
        def _checkpoint(self, fh, stamp, c, file, record, seconds):
            super()._checkpoint(fh, stamp, c, file, record, seconds)
            if record >= 0 and c["pages_without_text"]:
                raise _Interrupt

    with pytest.raises(_Interrupt):   # f-half.pdf's page 2 has no text
        StoppedInside(docs, out, MiaSplit(), lang="de", every=0.0, log=lambda s: None).run()
    said = []
    report = write_passages(docs, out, MiaSplit(), lang="de", log=said.append)
    assert report["pages_without_text"] == 1 and len(report["warnings"]) == 1
    assert not any("f-half.pdf page 2" in s for s in said)   # said by the run that read it


def test_a_missing_reader_library_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(XqaError, match=r"xqa\[documents\]"):
        list(read_file(FOLDER / "berichte" / "wikipedia-auszuege.pdf", "x.pdf"))


class _Interrupt(Exception):
    pass


class _Stopping:
    """The MIA rule, interrupted (as by Ctrl-C) after ``n`` documents."""

    def __init__(self, n: int):
        self.rule, self.left, self.name = MiaSplit(), n, "mia"

    def settings(self):
        return self.rule.settings()

    def split(self, doc, lang):
        self.left -= 1
        if self.left < 0:
            raise _Interrupt
        return self.rule.split(doc, lang)


def test_an_interrupted_run_resumes_to_the_same_passages(tmp_path):
    wikiextractor_sample(tmp_path / "dump", n=60)
    (tmp_path / "dump" / "notes.txt").write_text("Kuwait-Stadt ist der Sitz des Rates. " * 10, encoding="utf-8")
    whole = tmp_path / "whole.jsonl"
    write_passages(tmp_path / "dump", whole, MiaSplit(), lang="en", log=lambda s: None)
    out = tmp_path / "p.jsonl"
    for n in (7, 25):   # stopped twice, in a WikiExtractor file each time
        with pytest.raises(_Interrupt):
            Collector(tmp_path / "dump", out, _Stopping(n), lang="en", every=0.0, log=lambda s: None).run()
        assert not out.exists() and out.with_name("p.jsonl.part").exists()
    os.utime(tmp_path / "dump" / "notes.txt", ns=(1, 1))   # touched (a copy, a checkout): the same documents
    said = []
    report = write_passages(tmp_path / "dump", out, MiaSplit(), lang="en", log=said.append)
    assert any("resuming after" in s for s in said)
    assert out.read_bytes() == whole.read_bytes()
    assert report["passages"] == len(_rows(whole)) and report["files"]["read"] == report["files"]["found"]
    assert not out.with_name("p.jsonl.part").exists() and not out.with_name("p.jsonl.progress.json").exists()
    # changed documents start over
    (tmp_path / "dump" / "notes.txt").write_text("Kuwait-Stadt. " * 40, encoding="utf-8")
    with pytest.raises(_Interrupt):
        Collector(tmp_path / "dump", tmp_path / "q.jsonl", _Stopping(5), lang="en", every=0.0,
                  log=lambda s: None).run()
    (tmp_path / "dump" / "notes.txt").write_text("Kuwait-Stadt ist der Sitz. " * 40, encoding="utf-8")
    said = []
    write_passages(tmp_path / "dump", tmp_path / "q.jsonl", MiaSplit(), lang="en", log=said.append)
    assert any("starting over" in s for s in said)


def test_one_article_in_two_dumps_is_read_once_and_said(tmp_path):
    """A WikiExtractor article id read twice would give its passages the same ids, which the
    indexes refuse late in a build: the second is left out and reported, also on a resume."""
    line = json.dumps({"id": "12", "url": "https://en.wikipedia.org/wiki?curid=12", "title": "Anarchism",
                       "text": "Anarchism\n\nAnarchism is a political philosophy and movement that is sceptical "
                               "of authority and rejects all involuntary, coercive forms of hierarchy."}) + "\n"
    for year in ("2023", "2024"):
        (tmp_path / "d" / year / "AA").mkdir(parents=True)
        (tmp_path / "d" / year / "AA" / "wiki_00").write_text(line, encoding="utf-8")
    said = []
    report = write_passages(tmp_path / "d", tmp_path / "p.jsonl", MiaSplit(), lang="en", log=said.append)
    ids = [r["id"] for r in _rows(tmp_path / "p.jsonl")]
    assert len(ids) == len(set(ids)) == report["passages"] > 0
    assert any("skipped 2024/AA/wiki_00:1: document id 'enwiki-12' again (first at 2023/AA/wiki_00:1)" in s
               for s in said), said
    assert report["records_skipped"] == 1
    with pytest.raises(XqaError, match=r"wiki_00:1: document id 'enwiki-12' again"):   # --strict stops there
        Collector(tmp_path / "d", tmp_path / "s.jsonl", MiaSplit(), lang="en", strict=True, log=lambda s: None).run()


def test_the_output_inside_the_documents_folder_is_not_read_as_a_document(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("Oslo is the capital of Norway. " * 5, encoding="utf-8")
    (tmp_path / "d" / "gone.txt").symlink_to(tmp_path / "nowhere.txt")   # a link to nothing: said, not dropped
    out = tmp_path / "d" / "p.jsonl"
    said = []
    first = write_passages(tmp_path / "d", out, MiaSplit(), lang="en", log=said.append)
    again = write_passages(tmp_path / "d", out, MiaSplit(), lang="en", log=lambda s: None)
    assert first["passages"] == again["passages"] == len(_rows(out)) and again["files"]["found"] == 2
    assert f"  skipped gone.txt: a link to {tmp_path / 'nowhere.txt'}, which is not there" in said
    from xqa.cli import main   # a build writes a whole folder of files: refused inside its documents

    assert main(["build", "--documents", str(tmp_path / "d"), "--out", str(tmp_path / "d" / "build")]) == 1
    assert not (tmp_path / "d" / "build").exists()


# ----------------------------------------------------------------------------- provenance shown


def test_provenance_is_described_and_linked():
    assert describe({"source": "berichte/a.pdf", "page": 2, "start": 428, "end": 792}) == \
        "berichte/a.pdf, page 2, characters 428–792"
    assert describe({"source": "a.pdf", "page": 2, "page_end": 3, "start": 0, "end": 9}) == \
        "a.pdf, pages 2–3, characters 0–9"
    wiki = {"source": "AA/wiki_00", "url": "https://es.wikipedia.org/wiki?curid=1", "start": 0, "end": 5}
    assert describe(wiki) == "https://es.wikipedia.org/wiki?curid=1, from AA/wiki_00"
    assert link(wiki) == wiki["url"] and link({"url": "javascript:alert(1)"}) == "" and describe({}) == ""


def test_ask_lines_the_demo_table_and_answer_records_carry_provenance():
    from apps import render
    from xqa.records import Answer, Context, Evidence
    from xqa.rendering import answer_lines

    pdf = Context("berichte/a.pdf#2", "Auszüge", "Im Jahr 2008 waren 75,6 % Juden.", "de", 0.9, "hybrid",
                  meta={"source": "berichte/a.pdf", "page": 2, "start": 428, "end": 792})
    wiki = Context("eswiki-1#1", "LL", "Donde '$' es <b>", "es", 0.5, "dense",
                   meta={"source": "AA/wiki_00", "url": "https://es.wikipedia.org/wiki?curid=1&a=<x>"})
    answer = Answer("q", "75,6", 0.8, evidence=(Evidence(pdf, 0.7), Evidence(wiki, 0.3)))
    lines = answer_lines(answer, "Wie hoch?", "de", "hybrid")
    assert "    from: berichte/a.pdf, page 2, characters 428–792" in lines
    table = render.evidence_html(answer)
    assert "berichte/a.pdf, page 2, characters 428–792" in table
    assert ('<a href="https://es.wikipedia.org/wiki?curid=1&amp;a=&lt;x&gt;" target="_blank" '
            'rel="noopener noreferrer">') in table
    record = answer.to_dict()
    assert record["evidence"][0]["meta"]["page"] == 2
    # records without provenance stay as they were
    plain = Context("p", "t", "x", "en", 1.0, "dense")
    assert "meta" not in plain.to_dict() and "xqa-origin" not in render.evidence_html(
        Answer("q", "x", 1.0, evidence=(Evidence(plain, 1.0),)))


def test_passage_meta_round_trips_through_the_passage_file_and_the_arrow_store(tmp_path):
    from xqa.io import passages_dataset, read_passages, write_passages as write_rows
    from xqa.pipeline import _row_passage
    from xqa.records import Passage

    ps = [Passage("a#1", "A", "text one", "en", meta={"source": "a.pdf", "page": 3, "start": 0, "end": 8}),
          Passage("b", "B", "text two", "de")]
    path = tmp_path / "p.jsonl"
    write_rows(path, ps)
    back = list(read_passages(path))
    assert [p.meta for p in back] == [ps[0].meta, {}]
    assert '"meta"' not in path.read_text().splitlines()[1]
    ds = passages_dataset(path, cache_dir=str(tmp_path / "cache"))
    assert [_row_passage(ds[i]).meta for i in range(2)] == [ps[0].meta, {}]


# ----------------------------------------------------------------------------- the guide, end to end


def guide_commands() -> list[list[str]]:
    """The commands of docs/guide.md's block between ``<!-- documents -->`` and ``<!-- /documents -->``."""
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- documents -->\s*```bash\n(.*?)```\s*<!-- /documents -->", text, re.S)
    assert block, "docs/guide.md has no documents block"
    return [shlex.split(line.split("  #")[0]) for line in block.group(1).replace("\\\n", " ").splitlines()
            if line.strip()]


@pytest.mark.slow
def test_the_guides_documents_section_runs(tmp_path, monkeypatch, capsys):
    """A folder of .txt/.md/.html/.pdf files and a WikiExtractor file in six languages → a pipeline
    whose answers show their file and page (xqa ask), and the demo's table the same."""
    from xqa.cli import main

    commands = guide_commands()
    assert [c[:2] for c in commands] == [["xqa", "build"], ["xqa", "ask"], ["xqa", "ask"], ["xqa", "demo"]]
    monkeypatch.chdir(ROOT)
    out = tmp_path / "mine"
    build = [str(out) if a == "build/mine" else a for a in commands[0][1:]]
    assert main(build + ["--lexical-steps", "4", "--k", "6", "--n-passages", "3", "--precision", "fp32"]) == 0
    report = json.loads((out / "passages-report.json").read_text(encoding="utf-8"))
    assert set(report["passages_per_language"]) == {"de", "en", "es", "ja", "th", "zh"}
    config = out / "pipeline.json"
    capsys.readouterr()
    ask = [a.replace("build/mine/pipeline.json", str(config)) for a in commands[1][1:]]
    assert main(ask) == 0
    said = capsys.readouterr().out
    assert "75,6" in said.split("evidence:")[0]
    assert "from: berichte/wikipedia-auszuege.pdf, page 2, characters" in said
    ask = [a.replace("build/mine/pipeline.json", str(config)) for a in commands[2][1:]]
    assert main(ask + ["--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert any(e.get("meta", {}).get("url") == "https://en.wikipedia.org/wiki?curid=1002" for e in record["evidence"])
    # the demo shows the same evidence, the article's address linked
    from apps import render
    from xqa.config import PipelineConfig
    from xqa.pipeline import Pipeline

    pipe = Pipeline(PipelineConfig.load(config))
    asked = pipe.ask(commands[2][2], "auto")
    assert '<a href="https://en.wikipedia.org/wiki?curid=1002"' in render.evidence_html(asked.answer)
    assert commands[3][2:] == ["--config", "build/mine/pipeline.json"]


def test_an_html_or_markdown_table_is_read_a_row_a_paragraph_as_a_word_table_is(tmp_path):
    """A cell a paragraph would part a value from its row's name (``Mars`` … ``2``)."""
    (tmp_path / "moons.md").write_text("# Moons\n\nMoons per planet.\n\n| Planet | Moons |\n|---|---:|\n"
                                       "| Earth | 1 |\n| Mars | 2 |\n\nMars is red.\n", encoding="utf-8")
    [doc] = list(read_file(tmp_path / "moons.md", "moons.md"))
    assert doc.text == "Moons per planet.\n\nPlanet | Moons\n\nEarth | 1\n\nMars | 2\n\nMars is red."
    (tmp_path / "rivers.html").write_text(
        "<html><body><p>Rivers.</p><table><caption>Longest</caption><tr><th>River</th><th>Notes</th></tr>"
        "<tr><td>Ni<b>le</b></td><td>long<table><tr><td>6650</td><td>km</td></tr></table>north</td></tr>"
        "<tr><td></td><td></td></tr></table><p>After.</p></body></html>", encoding="utf-8")
    [doc] = list(read_file(tmp_path / "rivers.html", "rivers.html"))
    # the caption first; inline markup joins, a nested table's cells stand apart; an empty row is left out
    assert doc.text == "Rivers.\n\nLongest\n\nRiver | Notes\n\nNile | long 6650 km north\n\nAfter."


def test_a_word_file_reads_with_its_heading_as_title(tmp_path):
    import docx

    d = docx.Document()
    d.add_heading("Olympic Council of Asia", level=1)
    d.add_paragraph("The headquarters of the OCA is located at Kuwait City.")
    d.add_paragraph("East Timor is the newest member, joining in 2003.")
    d.save(str(tmp_path / "oca.docx"))
    [doc] = list(read_file(tmp_path / "oca.docx", "oca.docx"))
    assert doc.title == "Olympic Council of Asia" and doc.format == "docx"
    assert doc.text == ("The headquarters of the OCA is located at Kuwait City.\n\n"
                        "East Timor is the newest member, joining in 2003.")
    # a table is read where it stands, a row a paragraph, a merged cell once
    d = docx.Document()
    d.add_paragraph("Ports of the coast, north to south:")
    table = d.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "Ports"
    for i, text in enumerate(("Vigo", "Gijón", "Bilbao")):
        table.cell(1, i).text = text
    d.add_paragraph("Closing paragraph after the table.")
    d.save(str(tmp_path / "ports.docx"))
    [doc] = list(read_file(tmp_path / "ports.docx", "ports.docx"))
    assert doc.text == ("Ports of the coast, north to south:\n\nPorts\n\nVigo | Gijón | Bilbao\n\n"
                        "Closing paragraph after the table.")
    (tmp_path / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0 an encrypted Word file is an OLE container")
    [problem] = list(read_file(tmp_path / "locked.docx", "locked.docx"))
    assert "not a readable Word file" in str(problem) and str(problem).startswith("locked.docx: ")
