"""Writes tests/data/documents/: a small folder of documents in several formats and languages,
made from the shipped corpus's own paragraphs (their licenses in the folder's NOTICE), for the
guide's "Your documents" section and its test. Run ``python tests/make_documents.py`` to write
it again; the files it writes are fixed (no dates inside)."""
from __future__ import annotations

import gzip
import html
import json
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "documents"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"   # Debian's fonts-dejavu-core

# passage ids of xqa/corpus/passages.jsonl.gz, by the file they go into
PDF_PAGES = ["mlqa-de-e103a6983e1c", "mlqa-de-ee76c66fd72f", "mlqa-de-20107ca968d0"]
HTML = "mlqa-en-08faa930ae51"
MARKDOWN = "jaquad-dev-0084bb6818c2"
GZIP_TEXT = "mlqa-zh-c4fbb946e2d7"
WIKI = ["mlqa-es-aeaa1e89a5f1", "mlqa-en-cf7879e5b99d"]
THAI_TITLE = "แกงกะหรี่ญี่ปุ่น"


def passages() -> dict[str, dict]:
    with gzip.open(ROOT / "xqa" / "corpus" / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        return {p["id"]: p for p in map(json.loads, f)}


def write_pdf(path: Path, title: str, pages: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(datetime(2024, 1, 1, tzinfo=timezone.utc))
    pdf.set_title(title)
    pdf.add_font("dejavu", "", FONT)
    pdf.set_font("dejavu", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text, align="L")
    path.write_bytes(bytes(pdf.output()))


def main() -> None:
    ps = passages()
    used = []
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "berichte").mkdir(exist_ok=True)
    write_pdf(OUT / "berichte" / "wikipedia-auszuege.pdf",
              "Auszüge aus der deutschsprachigen Wikipedia", [ps[i]["text"] for i in PDF_PAGES])
    used += PDF_PAGES
    p = ps[HTML]
    body = "".join(f"<p>{html.escape(t)}</p>\n" for t in p["text"].split("\n\n"))
    (OUT / "olympic-council-of-asia.html").write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(p["title"])}</title>\n'
        '<script>var menu = "site navigation script";</script><style>nav { float: left; }</style></head>\n'
        '<body><nav><a href="/">Home</a> · <a href="/sports">Sports</a> · <a href="/asia">Asia</a></nav>\n'
        f'<main><h1>{html.escape(p["title"])}</h1>\n{body}</main>\n'
        '<footer>Text from Wikipedia (CC BY-SA 3.0), via MLQA; see NOTICE.</footer></body></html>\n',
        encoding="utf-8")
    used.append(HTML)
    p = ps[MARKDOWN]
    (OUT / "enzyme-ja.md").write_text(f"# {p['title']}\n\n{p['text']}\n", encoding="utf-8")
    used.append(MARKDOWN)
    thai = next(q for q in ps.values() if q["title"] == THAI_TITLE)
    (OUT / "thai-curry.txt").write_text(thai["text"] + "\n", encoding="utf-8")
    used.append(thai["id"])
    p = ps[GZIP_TEXT]
    (OUT / "zh").mkdir(exist_ok=True)
    (OUT / "zh" / "blood-pressure.txt.gz").write_bytes(gzip.compress(p["text"].encode("utf-8") + b"\n", mtime=0))
    used.append(GZIP_TEXT)
    wiki = OUT / "wikiextractor" / "AA"
    wiki.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, pid in enumerate(WIKI, 1):
        p = ps[pid]
        url = f"https://{p['lang']}.wikipedia.org/wiki?curid={1000 + n}"
        lines.append(json.dumps({"id": str(1000 + n), "revid": "1", "url": url, "title": p["title"],
                                 "text": p["text"].replace("\n\n", "\n")}, ensure_ascii=False))
    (wiki / "wiki_00").write_text("\n".join(lines) + "\n", encoding="utf-8")
    used += WIKI
    notice = ["Documents made from xqa's shipped corpus (xqa/corpus/passages.jsonl.gz) by",
              "tests/make_documents.py, for the guide's \"Your documents\" section and its test.",
              "Each file holds these Wikipedia paragraphs (Wikipedia's contributors), under the",
              "license of the question-answering set they were taken from:", ""]
    for pid in used:
        q = ps[pid]
        notice.append(f"- {pid} ({q['lang']}, {q['title'] or 'untitled'}): {q['source']}, {q['license']}")
    notice += ["", "Text under a Creative Commons BY-SA license stays under that license (share-alike)."]
    (OUT / "NOTICE").write_text("\n".join(notice) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
