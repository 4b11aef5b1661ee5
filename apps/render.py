"""What the demo shows, as plain functions: validation, highlighting, answer, n-best, evidence.

No Gradio here: every function maps records (:class:`xqa.records.Answer`) to
strings or rows, so the UI logic is unit-tested without a server
(``tests/test_demo.py``). Every piece of user or corpus text is HTML-escaped
before it reaches the page; only the markup built here is trusted.
"""
from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence

from xqa import rendering
from xqa.documents.provenance import describe, link
from xqa.errors import XqaError
from xqa.langid import language_name, script_of
from xqa.records import Answer
from xqa.rendering import NBEST_SHOWN

MAX_QUESTION_CHARS = 500

def method_label(method: str) -> str:
    """The display name of a retrieval method (its ``label`` in :mod:`xqa.methods`)."""
    from xqa.methods import method as find

    try:
        return find(method).label
    except XqaError:
        return method


def method_description(method: str) -> str:
    """What a retrieval method does, for the page's introduction (its ``help`` in :mod:`xqa.methods`)."""
    from xqa.methods import method as find

    try:
        return find(method).help
    except XqaError:
        return method


NBEST_HEADERS = ["#", "answer", "fused probability", "reader score", "passages containing it"]
EVIDENCE_HEADERS = ["#", "title", "lang", "source", "retriever score", "reader relevance", "passage"]

# Scripts written with spaces between words and without clitics glued to words:
# there an answer must start at a word start ("Paris" not inside "Comparison"),
# i.e. not right after a letter of the same script.
_WORD_CHARS = {
    "latin": "A-Za-z\u00C0-\u024F\u1E00-\u1EFF", "cyrillic": "\u0400-\u052F",
    "greek": "\u0370-\u03FF\u1F00-\u1FFF", "armenian": "\u0530-\u058F", "georgian": "\u10A0-\u10FF",
}


def validate_question(text: str | None, max_chars: int = MAX_QUESTION_CHARS) -> str | None:
    """A message for the user when ``text`` cannot be asked, else None."""
    if text is not None and not isinstance(text, str):
        return "The question must be text."
    text = (text or "").strip()
    if not text:
        return "Please type a question."
    if len(text) > max_chars:
        return (f"The question is {len(text)} characters long; the limit is {max_chars}. "
                "Please shorten it.")
    if any(unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\t\n\r" or ch == "\ufffd"
           for ch in text):
        return ("The question contains control characters or bytes that are not text (binary data?). "
                "Please type it as plain text.")
    from xqa.pipeline import askable

    if not askable(text):
        return "The question has no letters or digits, so there is nothing to search for. Please type a question."
    return None


def _needle_pattern(needle: str) -> str:
    parts = [re.escape(p) for p in needle.split()]
    body = r"\s+".join(parts)
    first, last = needle[0], needle[-1]
    if first.isdigit():
        body = r"(?<!\d)" + body  # "9" must not light up inside "1990"
    elif script_of(first) in _WORD_CHARS:
        body = f"(?<![{_WORD_CHARS[script_of(first)]}])" + body
    if last.isdigit():
        body += r"(?!\d)"  # "1" must not light up inside "1990"
    return body


def find_spans(text: str, needles: Iterable[str]) -> list[tuple[int, int]]:
    """Non-overlapping (start, end) spans of ``needles`` in ``text``, case-insensitive.

    Longer needles win where two overlap; white space inside a needle matches
    any run of white space.
    """
    cleaned = {unicodedata.normalize("NFC", n.strip()) for n in needles if n and n.strip()}
    if not cleaned:
        return []
    ordered = sorted(cleaned, key=len, reverse=True)
    pattern = re.compile("|".join(_needle_pattern(n) for n in ordered), re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text) if m.end() > m.start()]


def highlight(text: str, needles: Iterable[str]) -> str:
    """``text`` HTML-escaped, with every occurrence of a needle wrapped in ``<mark>``."""
    text = unicodedata.normalize("NFC", text)
    out, pos = [], 0
    for start, end in find_spans(text, needles):
        out.append(html.escape(text[pos:start]))
        out.append(f"<mark>{html.escape(text[start:end])}</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)


def contains(text: str, needle: str) -> bool:
    return bool(needle.strip()) and bool(find_spans(unicodedata.normalize("NFC", text), [needle]))


def intro_markdown(about: dict, languages: Sequence[str], method: str, reader: str) -> str:
    """The page's introduction: what it searches, how, and what full scale searches; ``reader``
    says how the reader answers (its family's ``description``, :mod:`reader.registry`)."""
    lines = ["# xqa — multilingual open-domain question answering"]
    n = about.get("passages")
    langs = ", ".join(f"{language_name(c)}" for c in languages) if languages else "any language"
    if n:
        lines.append(f"Ask in any language. This demo searches **{n:,} passages** in "
                     f"{len(languages)} languages ({langs})" + (f": {about['description']}." if about.get("description")
                                                               else "."))
    else:
        lines.append("Ask in any language.")
    lines.append(f"Passages are retrieved by {method_description(method)}.")
    if reader:
        lines.append(reader)
    return "\n\n".join(lines)


def readers_markdown(readers: Sequence[tuple[str, str]]) -> str:
    """How the page's readers answer, for the introduction: ``readers`` is (name, its family's
    description) per reader, the default first; one reader is its description alone."""
    if len(readers) == 1:
        return readers[0][1]
    if not readers:
        return ""
    lines = ["Choose the reader that answers (the first is the default):"]
    lines += [f"- **{html.escape(name)}**: {html.escape(text, quote=False) or 'a reader'}" for name, text in readers]
    return "\n".join(lines)


NO_ANSWER_TITLE = rendering.NO_ANSWER[:1].upper() + rendering.NO_ANSWER[1:]
UNCERTAIN_TITLE = "Uncertain answer"


def answer_html(answer: Answer, fused: bool, question_lang: str = "", threshold: float | None = None,
                not_found_threshold: float | None = None) -> str:
    """The answer in large type with its probability and where it was found; an answer
    extracted from a passage in another language than the question's is marked with it.

    Where the pipeline has an answerability calibrator (``answer.confidence`` set), the bar is
    the calibrated probability that the answer is right; below the threshold (``answer.answered``
    false) the answer is shown as :data:`UNCERTAIN_TITLE`, and below the not-found threshold too
    (``answer.found`` false) the page says :data:`NO_ANSWER_TITLE`, with the best guess and its
    probability under it."""
    if not answer.text.strip():
        return ('<div class="xqa-answer xqa-empty"><div class="xqa-label">Answer</div>'
                '<div class="xqa-answer-text" id="xqa-answer-text">(no answer)</div>'
                f'<div class="xqa-prob">probability <b id="xqa-answer-prob">{answer.score:.3f}</b></div></div>')
    written = rendering.written(answer)
    found = written or answer.text
    n_found = sum(contains(e.context.text, found) or contains(e.context.title, found) for e in answer.evidence)
    if written:
        where = (f"the reader copied “{written}” (found in {n_found} of {len(answer.evidence)} passages read), "
                 "written in the question's language by the answer label table")
    elif n_found:
        where = f"found in {n_found} of {len(answer.evidence)} passages read"
    else:
        where = "not found verbatim in the passages read (a generated or translated answer)"
    span_lang = rendering.foreign_lang(answer, question_lang)
    if span_lang:
        where = f"as written in a {language_name(span_lang)} passage ({span_lang}); " + where
    kind = "fused probability (reader × passage relevance × retriever score)" if fused else "reader probability"
    mark = ""
    if span_lang:
        mark = f' <span class="xqa-answer-lang" id="xqa-answer-lang">[{html.escape(span_lang)}]</span>'
    text = f'<span id="xqa-answer-text" dir="auto">{html.escape(answer.text)}{mark}</span>'
    if answer.confidence is None:
        pct = max(0.0, min(1.0, answer.score)) * 100
        return (
            '<div class="xqa-answer">'
            '<div class="xqa-label">Answer</div>'
            f'<div class="xqa-answer-text">{text}</div>'
            f'<div class="xqa-prob"><span class="xqa-bar"><span style="width:{pct:.1f}%"></span></span> '
            f'<b id="xqa-answer-prob">{answer.score:.3f}</b> {html.escape(kind)}</div>'
            f'<div class="xqa-where">{html.escape(where)}</div>'
            '</div>'
        )
    p = max(0.0, min(1.0, answer.confidence))
    bar = f'<span class="xqa-bar"><span style="width:{p * 100:.1f}%"></span></span> '
    right = (f'<b id="xqa-answer-prob">{p:.2f}</b> probability that the answer is right '
             f'(calibrated; {html.escape(kind.split(" (")[0])} {answer.score:.3f})')
    if answer.answered:
        return (
            '<div class="xqa-answer">'
            '<div class="xqa-label">Answer</div>'
            f'<div class="xqa-answer-text">{text}</div>'
            f'<div class="xqa-prob">{bar}{right}</div>'
            f'<div class="xqa-where">{html.escape(where)}</div>'
            '</div>'
        )
    if answer.found:
        below = f" (below {threshold:.2f} for a confident answer)" if threshold is not None else ""
        return (
            '<div class="xqa-answer xqa-uncertain">'
            f'<div class="xqa-label" id="xqa-uncertain">{html.escape(UNCERTAIN_TITLE)}</div>'
            f'<div class="xqa-answer-text">{text}</div>'
            f'<div class="xqa-prob">{bar}{right}{html.escape(below)}</div>'
            f'<div class="xqa-where">{html.escape(where)}</div>'
            '</div>'
        )
    below = f" ({rendering.not_found_reason(answer, threshold, not_found_threshold)})"
    return (
        '<div class="xqa-answer xqa-abstain">'
        '<div class="xqa-label">Answer</div>'
        f'<div class="xqa-no-answer" id="xqa-no-answer">{html.escape(NO_ANSWER_TITLE)}</div>'
        f'<div class="xqa-guess">Best guess: {text}</div>'
        f'<div class="xqa-prob">{bar}{right}{html.escape(below)}</div>'
        f'<div class="xqa-where">{html.escape(where)}</div>'
        '</div>'
    )


def nbest_rows(answer: Answer, limit: int = NBEST_SHOWN) -> list[list]:
    """One row per candidate, the best ``limit``: rank, text, probability, reader log-prob,
    passages containing it."""
    rows = []
    for i, c in enumerate(answer.candidates[:limit], 1):
        n = sum(contains(e.context.text, c.written or c.text) for e in answer.evidence)
        rows.append([i, rendering.candidate_label(c), round(float(c.score), 4), round(float(c.reader_score), 3), n])
    return rows


def evidence_html(answer: Answer, extra: Sequence[str] = ()) -> str:
    """The passages the reader saw as a table; the answer (and ``extra`` strings) highlighted."""
    if not answer.evidence:
        return '<p class="xqa-none">No passages were retrieved.</p>'
    written = rendering.written(answer)
    needles = [answer.text, *([written] if written else []), *extra]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in EVIDENCE_HEADERS)
    rows = []
    for i, e in enumerate(answer.evidence, 1):
        c = e.context
        hit = any(contains(c.text, t) or contains(c.title, t) for t in needles[: 2 if written else 1])
        rows.append(
            f'<tr class="xqa-passage{" xqa-hit" if hit else ""}" data-id="{html.escape(c.id, quote=True)}">'
            f'<td class="xqa-rank">{i}</td>'
            f'<td class="xqa-title" dir="auto">{highlight(c.title, needles)}{_where_html(c.meta)}</td>'
            f'<td class="xqa-lang" title="{html.escape(language_name(c.lang), quote=True)}">{html.escape(c.lang)}</td>'
            f'<td><span class="xqa-src xqa-src-{_css_name(c.source)}">{html.escape(c.source)}</span></td>'
            f'<td class="xqa-num">{c.score:.3f}</td>'
            f'<td class="xqa-num">{_relevance_cell(e.relevance)}</td>'
            f'<td class="xqa-text" dir="auto">{highlight(c.text, needles)}</td>'
            "</tr>")
    return (f'<table class="xqa-evidence"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _where_html(meta: dict) -> str:
    """Under the title: where the passage came from (file, page, offsets), linked where it is a web address."""
    where = describe(meta)
    if not where:
        return ""
    url = link(meta)
    text = html.escape(where)
    if url:
        text = (f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener noreferrer">'
                f'{html.escape(url)}</a>{html.escape(where[len(url):])}' if where.startswith(url) else text)
    return f'<div class="xqa-origin">{text}</div>'


def _css_name(source: str) -> str:
    """A retriever source as a CSS class suffix: ``dense (fallback)`` → ``dense-fallback``."""
    return "-".join(re.findall(r"[a-z0-9+]+", source.lower())).replace("+", "_") or "unknown"


def _relevance_cell(r: float) -> str:
    pct = max(0.0, min(1.0, float(r))) * 100
    return f'{r:.3f}<span class="xqa-bar xqa-small"><span style="width:{pct:.1f}%"></span></span>'


def status_markdown(lang: str, detected: bool, method: str, k: int, n_passages: int, seconds: float,
                    note: str = "", reader: str = "", read: int | None = None) -> str:
    """One line saying which language, method, reader (``reader``: its name, where the page
    offers several) and budget answered, and how fast; ``read``: the passages the reader got,
    where retrieval found fewer than ``n_passages``."""
    how = "detected" if detected else "chosen"
    passages = (f"{read} of {n_passages} passages (retrieval found {read})" if read is not None and read < n_passages
                else f"{n_passages} passages")
    parts = [f"**Language:** {html.escape(language_name(lang))} (`{html.escape(lang)}`, {how})",
             f"**Retrieval:** {html.escape(method_label(method))}, K = {k}",
             f"**Reader:** {html.escape(reader) + ', ' if reader else ''}{passages}",
             f"answered in {seconds:.2f} s"]
    line = " · ".join(parts)
    return f"{line}\n\n{note}" if note else line


def message_markdown(message: str) -> str:
    """A user-facing problem (empty question, unknown method...), shown in place of the status;
    escaped, since it may quote what the user sent."""
    return f"⚠️ **{html.escape(message, quote=False)}**"


CSS = """
.xqa-answer { padding: 12px 16px; border-radius: 8px; border: 1px solid #d0d7de; }
.xqa-label { font-size: 0.85em; opacity: 0.7; text-transform: uppercase; letter-spacing: 0.05em; }
.xqa-answer-text { font-size: 1.8em; font-weight: 600; margin: 4px 0; }
.xqa-prob, .xqa-where { font-size: 0.95em; }
.xqa-abstain { border-color: #f59e0b; background: #fffbeb; }
.xqa-no-answer { font-size: 1.5em; font-weight: 600; margin: 4px 0; }
.xqa-guess { font-size: 1.1em; margin: 2px 0 4px; }
.xqa-abstain .xqa-bar > span { background: #f59e0b; }
.xqa-uncertain { border-color: #60a5fa; background: #eff6ff; }
.xqa-uncertain .xqa-bar > span { background: #60a5fa; }
.xqa-bar { display: inline-block; width: 120px; height: 10px; background: #e5e7eb; border-radius: 5px;
           vertical-align: middle; overflow: hidden; }
.xqa-bar > span { display: block; height: 100%; background: #2563eb; }
.xqa-bar.xqa-small { width: 60px; height: 6px; margin-left: 6px; }
table.xqa-evidence { border-collapse: collapse; width: 100%; font-size: 0.92em; }
table.xqa-evidence th, table.xqa-evidence td { border-bottom: 1px solid #d0d7de; padding: 6px 8px;
           text-align: left; vertical-align: top; }
table.xqa-evidence td.xqa-num { text-align: right; white-space: nowrap; }
table.xqa-evidence .xqa-origin { font-size: 0.85em; color: #57606a; margin-top: 2px; overflow-wrap: anywhere; }
table.xqa-evidence td.xqa-text { min-width: 320px; }
table.xqa-evidence tr.xqa-hit td.xqa-rank { border-left: 4px solid #16a34a; }
mark { background: #fde047; color: #111827; padding: 0 2px; border-radius: 2px; }
.xqa-src { padding: 1px 6px; border-radius: 10px; font-size: 0.85em; background: #e5e7eb; color: #111827; }
.xqa-src-dense { background: #dbeafe; }
.xqa-src-sparse { background: #fef3c7; }
.xqa-src-corroborated { background: #dcfce7; }
.xqa-src-spar { background: #ede9fe; }
.xqa-src-dense-fallback { background: #fee2e2; }
"""
