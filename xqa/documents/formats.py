"""Reading documents: the files of a folder, each as its text, title and where it came from.

=============================  ===========================================================
file                           what is read
=============================  ===========================================================
``.txt`` ``.text``             the text (UTF-8, or UTF-16 with its byte-order mark)
``.md`` ``.markdown``          rendered by markdown-it-py, then read as HTML; title: the
                               first heading
``.html`` ``.htm`` ``.xhtml``  the main text (``<main>``, else ``<article>``, else
                               ``<body>``) block by block, a table row by row (cells
                               joined by `` | ``), without scripts, styles,
                               navigation, headers, footers, asides and forms (lxml);
                               title: ``<title>``, else the first ``<h1>``
``.pdf``                       the text layer page by page (pypdf); title: the PDF's
                               metadata; a page without text is reported by its number
``.docx``                      paragraphs and table rows (cells joined by `` | ``;
                               python-docx); title: the core
                               properties, else the first Title/Heading paragraph
``wiki_00`` ``.json``          WikiExtractor ``--json`` output: one ``{"id", "url",
``.jsonl``                     "title", "text"}`` per line, streamed
any of these + ``.gz``         gzip'd; WikiExtractor's output also ``.bz2`` (``--compress``)
=============================  ===========================================================

Everything else in the folder is left out and reported; hidden files and folders (a name
starting with ``.``) are left out and named in the report (``hidden``). A file that
gives no text (empty, encrypted, not decodable, a PDF without a text layer) is a
:class:`Problem` naming it (and the page or line), never an exception: the caller counts it,
or stops at it (``--strict``). HTML was measured against trafilatura on pages made from the
shipped corpus's paragraphs (docs/guide.md, "Your documents"): lxml with these rules kept
every paragraph and no navigation, 40 times faster; trafilatura dropped paragraphs and kept
navigation on some pages.

A document's ``text`` is what the splitters cut and what a passage's character offsets
(``meta.start``/``meta.end``) point into: paragraphs separated by a blank line (by a line
break in WikiExtractor's articles, whose text is kept exactly as WikiExtractor wrote it).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from xqa.errors import XqaError

EXTRA = "documents"
FORMATS = {".txt": "txt", ".text": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html",
           ".xhtml": "html", ".pdf": "pdf", ".docx": "docx", ".json": "wiki", ".jsonl": "wiki"}
_WIKI_FILE = re.compile(r"wiki_\d+$")   # WikiExtractor's output files: AA/wiki_00, AA/wiki_01, ...
_COMPRESSIONS = (".gz", ".bz2")


@dataclass
class Document:
    """One document: its text (paragraphs separated by a blank line, or by a line break
    where ``lines``), title and provenance."""

    id: str
    source: str          # the file, relative to the documents folder
    title: str
    text: str
    format: str          # txt, md, html, pdf, docx, wiki
    url: str = ""
    pages: tuple[tuple[int, int], ...] = ()   # (offset in text where the page starts, page number): PDF
    lines: bool = False  # a paragraph is a line (WikiExtractor), not a blank-line block
    record: int = 0      # the line of a WikiExtractor file it was read from (0: the whole file)

    def page_at(self, offset: int) -> int | None:
        """The page the character at ``offset`` is on (PDF), else None."""
        page = None
        for start, number in self.pages:
            if start > offset:
                break
            page = number
        return page


@dataclass
class Problem:
    """A file, page or record that gave no text, and why; ``skipped``: the whole file or
    record was left out (a page without text in a PDF that has others is not)."""

    source: str
    reason: str
    page: int | None = None
    line: int | None = None
    skipped: bool = True

    def where(self) -> str:
        return self.source + (f":{self.line}" if self.line else "") + (f" page {self.page}" if self.page else "")

    def __str__(self) -> str:
        return f"{self.where()}: {self.reason}"

    def to_dict(self) -> dict:
        return {k: v for k, v in {"file": self.source, "page": self.page, "line": self.line,
                                  "reason": self.reason}.items() if v is not None}


class _Skip(Exception):
    def __init__(self, reason: str, page: int | None = None, line: int | None = None):
        super().__init__(reason)
        self.reason, self.page, self.line = reason, page, line


def need(module: str, package: str):
    """``module`` imported, or an error naming the extra that installs ``package``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise XqaError(f"reading these documents needs {package}, which is not installed: "
                       f"pip install 'xqa[{EXTRA}]' (or pip install {package})") from None


def format_of(path: Path) -> str | None:
    """The format xqa reads ``path`` as (``txt``, ``md``, ``html``, ``pdf``, ``docx``, ``wiki``),
    or None for a file it does not read."""
    name = path.name.lower()
    for c in _COMPRESSIONS:
        if name.endswith(c):
            name = name[: -len(c)]
            break
    if _WIKI_FILE.search(name):
        return "wiki"
    suffix = Path(name).suffix
    return FORMATS.get(suffix)


def document_files(root: Path, leave_out: Iterable[Path] = (), hidden: list[str] | None = None) -> list[Path]:
    """Every file under ``root`` (or ``root`` itself), in a fixed order (the order passages are
    written and a rerun resumes in); a linked folder is read as a folder (once, where a link
    leads back into a folder being read). Hidden files and folders (a name starting with ``.``)
    are left out, and named in ``hidden`` (a folder once, not its files). ``leave_out``: files or
    folders not read though they are under ``root`` (what the command itself writes there)."""
    if root.is_file():
        return [root]
    left = [Path(os.path.abspath(p)) for p in leave_out]
    out: list[Path] = []
    walked: set[str] = set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in walked:   # a link to a folder already read (or to one above it)
            dirs[:] = []
            continue
        walked.add(real)
        here = Path(folder)
        for name in sorted(dirs):
            if name.startswith("."):
                if hidden is not None:
                    hidden.append(str((here / name).relative_to(root)) + "/")
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            p = here / name
            if name.startswith("."):
                if hidden is not None:
                    hidden.append(str(p.relative_to(root)))
                continue
            if not (p.is_file() or _dangling(p)):   # (a link to nothing is kept: reading it reports it)
                continue
            absolute = Path(os.path.abspath(p))
            if any(absolute == q or q in absolute.parents for q in left):
                continue
            out.append(p)
    if hidden is not None:
        hidden.sort()
    return sorted(out)


def stem(path: Path) -> str:
    """The file name without its extensions: the title of a document that has none."""
    name = path.name
    for c in _COMPRESSIONS:
        if name.lower().endswith(c):
            name = name[: -len(c)]
    return Path(name).stem or name


def _raw(path: Path) -> bytes:
    name = path.name.lower()
    if name.endswith(".gz"):
        import gzip

        with gzip.open(path, "rb") as f:
            return f.read()
    if name.endswith(".bz2"):
        import bz2

        with bz2.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


def _open(path: Path):
    name = path.name.lower()
    if name.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    if name.endswith(".bz2"):
        import bz2

        return bz2.open(path, "rb")
    return open(path, "rb")


_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode(raw: bytes, declared: str | None = None) -> str:
    """Text of a file: UTF-8 or UTF-16 by byte-order mark, else UTF-8, else the encoding the
    file declares (an HTML ``charset``); anything else is a problem (unknown encoding)."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom):].decode(encoding) if encoding == "utf-8" else raw.decode(encoding)
            except UnicodeDecodeError:
                raise _Skip(f"starts with a {encoding.upper()} byte-order mark but is not valid {encoding.upper()}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if declared:
            try:
                return raw.decode(declared)
            except (LookupError, UnicodeDecodeError):
                pass
        line = raw.count(b"\n", 0, e.start) + 1
        raise _Skip(f"unknown encoding: not UTF-8 (byte 0x{raw[e.start]:02x} on line {line})"
                    + (f" nor its declared {declared}" if declared else "") + "; save it as UTF-8") from None


def _clean(text: str) -> str:
    """Line ends as ``\\n``, no NUL or other control characters but tab and line break,
    paragraphs (blank-line blocks) with their lines' trailing space removed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# ----------------------------------------------------------------------------- per format


def read_txt(path: Path) -> tuple[str, str]:
    return "", _clean(decode(_raw(path)))


_HTML_DROP = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "iframe",
              "svg", "button", "select", "textarea", "head")
_HTML_BLOCKS = frozenset({"p", "div", "section", "article", "main", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul",
                          "ol", "dl", "dt", "dd", "pre", "blockquote", "table", "tr", "td", "th", "caption",
                          "figure", "figcaption", "hr", "br", "address", "details", "summary", "body"})


def html_text(markup: str | bytes) -> tuple[str, str]:
    """``(title, main text)`` of an HTML page: block elements become paragraphs (blank-line
    separated), whitespace inside a block is collapsed to single spaces."""
    lxml_html = need("lxml.html", "lxml")
    try:
        doc = lxml_html.document_fromstring(markup)
    except Exception as e:   # lxml's ParserError for markup with no elements at all
        raise _Skip(f"not readable as HTML ({e})") from None
    title_el = doc.find(".//title")
    title = " ".join(title_el.text_content().split()) if title_el is not None else ""
    for bad in doc.xpath("|".join(f"//{t}" for t in _HTML_DROP) + "|//*[@role='navigation']"
                         "|//*[@aria-hidden='true']"):
        bad.drop_tree()
    if not title:
        h1 = doc.find(".//h1")
        title = " ".join(h1.text_content().split()) if h1 is not None else ""
    roots = doc.xpath("//main") or doc.xpath("//article") or doc.xpath("//body") or [doc]
    blocks: list[str] = [""]

    def walk(el) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""   # comments and processing instructions
        if tag.lower() == "table":
            blocks.extend(["", *_table_rows(el), ""])
            return
        block = tag.lower() in _HTML_BLOCKS
        if block:
            blocks.append("")
        if tag and el.text:
            blocks[-1] += el.text
        for child in el:
            walk(child)
            if child.tail:
                blocks[-1] += child.tail
        if block:
            blocks.append("")

    walk(roots[0])
    paragraphs = [" ".join(b.split()) for b in blocks]
    return title, "\n\n".join(p for p in paragraphs if p)


def _table_rows(table) -> list[str]:
    """An HTML table as paragraphs, as a Word table is read (:func:`_docx_rows`): its caption,
    then each row with its cells joined by `` | `` (a row kept whole, its cells in order: one
    paragraph a cell left a value apart from its row's name). A table inside a cell is read as
    that cell's text."""
    def own(el, tags: tuple[str, ...]) -> list:
        """The ``tags`` elements under ``el`` that belong to it, not to a table nested in it."""
        out = []
        for child in el:
            t = child.tag.lower() if isinstance(child.tag, str) else ""
            if t in tags:
                out.append(child)
            elif t != "table":
                out.extend(own(child, tags))
        return out

    def text(el) -> str:
        """``el``'s text on one line: block elements (a nested table's cells) apart, inline ones joined."""
        parts = [el.text or ""]
        for child in el:
            t = child.tag.lower() if isinstance(child.tag, str) else ""
            apart = " " if t in _HTML_BLOCKS else ""
            parts += [apart, text(child) if t else "", apart, child.tail or ""]
        return "".join(parts)

    paragraphs = [" ".join(text(c).split()) for c in own(table, ("caption",))]
    for row in own(table, ("tr",)):
        cells = [" ".join(text(c).split()) for c in own(row, ("td", "th"))]
        if any(cells):
            paragraphs.append(" | ".join(cells))
    return [p for p in paragraphs if p]


def read_html(path: Path) -> tuple[str, str]:
    raw = _raw(path)
    head = raw[:4096].decode("ascii", "replace")
    m = re.search(r"""charset\s*=\s*["']?([A-Za-z0-9._-]+)""", head)
    text = decode(raw, m.group(1) if m else None)
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)   # lxml refuses a str with an encoding declaration
    return html_text(text)


def read_md(path: Path) -> tuple[str, str]:
    markdown_it = need("markdown_it", "markdown-it-py")
    text = decode(_raw(path))
    front = re.match(r"\A---\n.*?\n---\n", text.replace("\r\n", "\n"), re.S)   # YAML front matter
    if front:
        text = text.replace("\r\n", "\n")[front.end():]
    md = markdown_it.MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    title = next((tokens[i + 1].content.strip() for i, t in enumerate(tokens[:-1]) if t.type == "heading_open"), "")
    if not text.strip():
        return title, ""
    _, body = html_text(f"<html><body>{md.render(text)}</body></html>")
    return title, body


def _join_lines(page: str) -> str:
    """A PDF page's text: its lines joined into paragraphs (a blank line, or a line that ends
    a sentence and is much shorter than the page's longest, ends a paragraph); lines of
    scripts written without spaces (Chinese, Japanese, Thai) are joined without one."""
    from xqa.langid.rules import script_of

    lines = [" ".join(ln.split()) for ln in _clean(page).split("\n")]   # justified lines come with runs of spaces
    width = max((len(ln) for ln in lines), default=0)
    out, para = [], ""
    for ln in lines:
        if not ln:
            if para:
                out.append(para)
            para = ""
            continue
        if para:
            a, b = para[-1], ln[0]
            tight = script_of(a) in ("han", "kana", "thai") and script_of(b) in ("han", "kana", "thai")
            para += ("" if tight or a == "-" else " ") + ln   # "well-" + "known": a word broken at the line end
        else:
            para = ln
        if len(ln) < 0.6 * width and ln[-1] in ".!?。！？:;」)\"”":
            out.append(para)
            para = ""
    if para:
        out.append(para)
    return "\n\n".join(out)


def read_pdf(path: Path, problems: list[Problem], source: str) -> tuple[str, str, tuple[tuple[int, int], ...]]:
    import logging

    logger = logging.getLogger("pypdf")   # its own lines ("EOF marker not found") name no file: the
    level = logger.level                  # problems it leads to are said here, with the file's name
    logger.setLevel(logging.ERROR + 10)
    try:
        return _read_pdf(path, problems, source)
    finally:
        logger.setLevel(level)


def _read_pdf(path: Path, problems: list[Problem], source: str) -> tuple[str, str, tuple[tuple[int, int], ...]]:
    pypdf = need("pypdf", "pypdf")
    import io

    try:
        reader = pypdf.PdfReader(io.BytesIO(_raw(path)))
        encrypted = reader.is_encrypted
    except Exception as e:   # pypdf raises PdfReadError and assorted errors on a damaged file
        raise _Skip(f"not a readable PDF ({type(e).__name__}: {e})") from None
    if encrypted:
        try:
            opened = reader.decrypt("")   # many PDFs are encrypted with an empty user password
        except Exception:
            opened = 0
        if not opened:
            raise _Skip("encrypted: it needs a password (decrypt it first, e.g. qpdf --decrypt)")
    title = ""
    try:
        meta = reader.metadata
        title = " ".join(str(meta.title).split()) if meta and meta.title else ""
        pages = list(reader.pages)
    except Exception as e:
        raise _Skip(f"not a readable PDF ({type(e).__name__}: {e})") from None
    if not pages:
        raise _Skip("a PDF with no pages")
    parts, starts, empty, offset = [], [], [], 0
    for number, page in enumerate(pages, 1):
        try:
            text = _join_lines(page.extract_text() or "")
        except Exception as e:
            problems.append(Problem(source, f"page not readable ({type(e).__name__}: {e})", page=number,
                                    skipped=False))
            continue
        if not text:
            empty.append(number)
            continue
        if parts:
            offset += 2   # the blank line between pages
        starts.append((offset, number))
        parts.append(text)
        offset += len(text)
    if not parts:
        raise _Skip("no text layer on any page (a scanned PDF? run OCR on it first, e.g. ocrmypdf)")
    for number in empty:
        problems.append(Problem(source, "no text layer on this page (scanned? it is left out)", page=number,
                                skipped=False))
    return title, "\n\n".join(parts), tuple(starts)


def read_docx(path: Path) -> tuple[str, str]:
    docx = need("docx", "python-docx")
    import io

    from docx.table import Table

    try:
        d = docx.Document(io.BytesIO(_raw(path)))
    except Exception as e:   # an encrypted Word file is not a zip file at all
        raise _Skip(f"not a readable Word file (encrypted, or not .docx: {type(e).__name__})") from None
    title = (d.core_properties.title or "").strip()
    paragraphs = []
    for block in d.iter_inner_content():   # paragraphs and tables in the document's order
        if isinstance(block, Table):
            paragraphs += _docx_rows(block)
            continue
        text = " ".join(block.text.split())
        if not text:
            continue
        if not title and (block.style is not None and (block.style.name or "").startswith(("Title", "Heading"))):
            title = text
        paragraphs.append(text)
    return title, "\n\n".join(paragraphs)


def _docx_rows(table) -> list[str]:
    """A Word table's rows, one paragraph each, cells joined by `` | ``: a cell merged across
    columns once (python-docx repeats it in every column it spans)."""
    rows = []
    for row in table.rows:
        cells, seen = [], None
        for cell in row.cells:
            if cell._tc is not seen:
                cells.append(" ".join(cell.text.split()))
            seen = cell._tc
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


_WIKI_HOST = re.compile(r"//([a-z][a-z0-9-]*)\.wikipedia\.org", re.I)


def wiki_prefix(url: str) -> str:
    """``https://fr.wikipedia.org/wiki?curid=1`` → ``frwiki`` (the edition, as a dump is named);
    ``wiki`` for any other address."""
    m = _WIKI_HOST.search(url or "")
    return f"{m.group(1).lower().replace('-', '_')}wiki" if m else "wiki"


def read_wiki(path: Path, source: str, after: int = 0) -> Iterator[Document | Problem]:
    """WikiExtractor ``--json`` articles, streamed line by line (any file size, constant memory);
    the lines up to ``after`` are passed over without being parsed (a resumed run)."""
    import json

    try:
        f = _open(path)
    except OSError as e:
        yield Problem(source, f"not readable ({e.strerror or e})")
        return
    seen = after > 0
    with f:
        n = 0
        try:
            for n, raw in enumerate(f, 1):
                if n <= after or not raw.strip():
                    continue
                first, seen = not seen, True
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    why = f"{type(e).__name__}: {e}"
                else:
                    why = "" if isinstance(obj, dict) and isinstance(obj.get("text"), str) else "no 'text' field"
                if why and first:   # a JSON file of another kind (package.json): the file, once
                    yield Problem(source, f"not WikiExtractor --json output (line {n}: {why})")
                    return
                if why:
                    yield Problem(source, f"not a WikiExtractor --json line ({why})", line=n)
                    continue
                title = obj.get("title") if isinstance(obj.get("title"), str) else ""
                text = obj["text"]   # as written: the MIA rule's Thai words count its spaces
                if not text.strip():
                    yield Problem(source, f"article {obj.get('id', '')!s} {title!r} has no text", line=n)
                    continue
                url = obj.get("url") if isinstance(obj.get("url"), str) else ""
                art = str(obj.get("id", n))
                yield Document(id=f"{wiki_prefix(url)}-{art}", source=source, title=title.strip(), text=text,
                               format="wiki", url=url, lines=True, record=n)
        except (OSError, EOFError) as e:   # a truncated .bz2/.gz
            yield Problem(source, f"unreadable after line {n} ({type(e).__name__}: {e})", line=n + 1)
    if not seen:
        yield Problem(source, "empty: no articles")


def _dangling(path: Path) -> bool:
    """A symbolic link to a file that is not there."""
    return path.is_symlink() and not path.exists()


def read_file(path: Path, source: str, after: int = 0) -> Iterator[Document | Problem]:
    """The documents of one file (one, or a WikiExtractor file's articles), and its problems."""
    if _dangling(path):
        yield Problem(source, f"a link to {os.readlink(path)}, which is not there")
        return
    fmt = format_of(path)
    if fmt is None:
        yield Problem(source, "not a document format xqa reads (.txt .md .html .pdf .docx, WikiExtractor "
                              "JSON; each also .gz)")
        return
    if fmt == "wiki":
        yield from read_wiki(path, source, after)
        return
    problems: list[Problem] = []
    pages: tuple[tuple[int, int], ...] = ()
    try:
        if fmt == "txt":
            title, text = read_txt(path)
        elif fmt == "md":
            title, text = read_md(path)
        elif fmt == "html":
            title, text = read_html(path)
        elif fmt == "pdf":
            title, text, pages = read_pdf(path, problems, source)
        else:
            title, text = read_docx(path)
    except _Skip as e:
        yield Problem(source, e.reason, page=e.page, line=e.line)
        return
    except OSError as e:
        yield Problem(source, f"not readable ({e.strerror or e})")
        return
    except (EOFError, ValueError) as e:   # a damaged .gz or .bz2
        yield Problem(source, f"not readable ({type(e).__name__}: {e})")
        return
    yield from problems
    first, _, rest = text.partition("\n\n")
    if title and fmt != "pdf" and first.strip() == title.strip():
        text = rest   # the heading the title came from: every passage carries the title anyway
    if not text.strip():
        yield Problem(source, "empty: no text")
        return
    yield Document(id=source, source=source, title=title or stem(path), text=text, format=fmt, pages=pages)


__all__ = ["Document", "Problem", "document_files", "format_of", "html_text", "read_file", "wiki_prefix"]
