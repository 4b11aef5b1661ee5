"""An answer for people, as plain text: what ``xqa ask`` prints, and the parts the demo's page
(``apps/render.py``) shows the same way: the not-found wording, the n-best candidates and how
each is labelled, which answer was copied or taken from a passage in another language.

Pure functions of records (:class:`xqa.records.Answer`); nothing here loads a model.
"""
from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

from xqa.documents.provenance import describe
from xqa.errors import XqaError
from xqa.langid.codes import language_name
from xqa.records import Answer, Candidate

UNDETERMINED = "und"   # a passage or question whose language is not known
NO_ANSWER = "no answer found in this collection"  # below the not-found threshold
UNCERTAIN = "uncertain"  # between the not-found threshold and the answerability threshold
NBEST_SHOWN = 10    # a pointer-generator reader reads ~60 candidates; the best of them are shown
EMPTY = "(empty)"
TEXT_WIDTH = 100    # an evidence passage's line width in the terminal


def written(answer: Answer) -> str:
    """The answer as the reader copied it when the label table wrote it in the question's
    language (``""`` otherwise)."""
    return answer.candidates[0].written if answer.candidates else ""


def foreign_lang(answer: Answer, question_lang: str) -> str:
    """The language of the passage the answer was taken from, when it is not the question's
    (``""`` otherwise, and where either is not known: ``und``)."""
    span_lang = answer.candidates[0].lang if answer.candidates else ""
    known = span_lang and question_lang and UNDETERMINED not in (span_lang, question_lang)
    return span_lang if known and span_lang != question_lang else ""


def candidate_label(c: Candidate) -> str:
    """An n-best candidate's text (``(empty)`` for none), and what the reader copied when the
    label table rewrote it."""
    text = c.text if c.text.strip() else EMPTY
    return f"{text} ← {c.written}" if c.written else text


def script_search(searched: Sequence[str] | None, mark: Callable[[str], str] = str, method: str = "") -> str:
    """How a question of unknown language is searched: BM25 in the indexes of its script,
    ``searched`` (:meth:`xqa.pipeline.Pipeline.script_indexes`; None: not known here), or in none,
    and, where ``method`` has a dense part (any but the BM25-only methods; none named: it has),
    dense retrieval in all languages; ``mark`` writes a language code (the demo's as code)."""
    if method and not uses_bm25(method):
        return f"dense retrieval searches all languages ({method} uses no BM25 index)"
    dense = "" if lexical_only(method) else " and dense retrieval all languages"
    if searched is None:
        return f"BM25 searches the indexes of its script{dense}"
    if not searched:   # a BM25-only method's fallback (dense) searches where BM25 finds nothing
        return "no BM25 index is written in its script, so dense retrieval alone searches, in all languages"
    return f"BM25 searches the indexes of its script ({', '.join(map(mark, searched))}){dense}"


def uses_bm25(method: str) -> bool:
    """Whether the retrieval ``method`` searches a per-language BM25 index (``sparse`` or ``roman``)."""
    from xqa import methods

    try:
        return bool(set(methods.needs(method)) & {"sparse", "roman"})
    except XqaError:
        return True


def lexical_only(method: str) -> bool:
    """Whether the retrieval ``method`` searches BM25 indexes alone (``sparse``, ``roman``, ``sparse+roman``)."""
    from xqa import methods

    try:
        return bool(method) and set(methods.needs(method)) <= {"sparse", "roman"}
    except XqaError:
        return False


def not_found_reason(answer: Answer, threshold: float | None, not_found_threshold: float | None) -> str:
    """Why an answer was found wanting (``answer.found`` false), as the pipeline decided it: its
    P(right) below ``threshold`` and, against ``not_found_threshold``, its P(answerable) where the
    pipeline has that calibrator, else its P(right) again."""
    right = f"P(right) {answer.confidence:.2f}"
    said = [f"{right} < {threshold:.2f}" if threshold is not None else right]
    if not_found_threshold is not None:
        if answer.answerable is not None:
            said.append(f"P(answerable) {answer.answerable:.2f} < {not_found_threshold:.2f}")
        elif threshold is None or not_found_threshold < threshold:
            said = [f"{right} < {not_found_threshold:.2f}"]
    return " and ".join(said)


def answer_lines(answer: Answer, question: str, lang: str, method: str, *, unknown_lang: bool = False,
                 identified: str = "", searched: Sequence[str] | None = None, threshold: float | None = None,
                 not_found_threshold: float | None = None, show: int = 5, uncalibrated: str = "",
                 indexed: bool = True, fused: bool = True) -> list[str]:
    """The answer to ``question`` (in ``lang``; ``unknown_lang``: it was searched in the BM25 indexes
    of its script, ``searched`` (:func:`script_search`), as not identified or, ``identified``, as a
    language the pipeline has no index for) as
    ``xqa ask`` prints it: the question, the answer line (marked :data:`UNCERTAIN` below the
    answerability ``threshold``; :data:`NO_ANSWER` and the best guess below the
    ``not_found_threshold``; ``uncalibrated``: why an answer without a calibrated probability has
    none, where its reader has a calibrator; ``indexed`` false: ``lang`` was given, and no BM25 index
    covers it; ``fused``: the answer's probability is evidence fusion's, else the reader's alone),
    the n-best line and the first ``show`` evidence passages."""
    from xqa.pipeline import FALLBACK_SUFFIX

    if unknown_lang and identified:
        how = (f": reads as {language_name(identified)} ({identified}), which no BM25 index here covers; "
               f"{script_search(searched, method=method)}")
    else:
        how = f": not identified; {script_search(searched, method=method)}" if unknown_lang else ""
    if not unknown_lang and not indexed:   # searched as a question of unknown language is
        how = f": no BM25 index here covers {language_name(lang)}; {script_search(searched, method=method)}"
    lines = [f"question ({lang}{how}): {question}"]
    if (unknown_lang or not indexed) and searched is not None and not searched and answer.evidence:
        method = f"{method}, dense alone here"   # no BM25 index in the question's script (said above)
    copied_text = written(answer)
    span_lang = foreign_lang(answer, lang)
    mark = f" [{span_lang}: as written in a passage in that language]" if span_lang else ""
    copied = (f"; the reader copied {copied_text!r}, written in the question's language by the label table"
              if copied_text else "")
    text = " ".join(answer.text.split()) or EMPTY   # a span across lines (a document's) is shown on one
    if answer.confidence is None:
        p = "fused p" if fused else "reader p"
        lines.append(f"answer: {text}{mark}    ({p} = {answer.score:.3f}, retrieval: {method}{copied}"
                     f"{'; ' + uncalibrated if uncalibrated else ''})")
    else:
        below = (f" (< {threshold:.2f} for a confident answer)" if threshold is not None and not answer.answered
                 and answer.found else "")
        how = (f"P(right) = {answer.confidence:.2f} calibrated{below}, fused p = {answer.score:.3f}, "
               f"retrieval: {method}{copied}")
        if answer.answered:
            lines.append(f"answer: {text}{mark}    ({how})")
        elif answer.found:
            lines.append(f"answer ({UNCERTAIN}): {text}{mark}    ({how})")
        else:
            lines.append(f"answer: {NO_ANSWER} ({not_found_reason(answer, threshold, not_found_threshold)})")
            lines.append(f"best guess: {text}{mark}    ({how})")
    if len(answer.candidates) > 1:
        shown, rest = answer.candidates[:NBEST_SHOWN], len(answer.candidates) - NBEST_SHOWN
        lines.append("n-best: " + " | ".join(f"{' '.join(candidate_label(c).split())} ({c.score:.3f})" for c in shown)
                     + (f" | … {rest} more (--json)" if rest > 0 else ""))
    lines.append("evidence:")
    if not answer.evidence:
        # BM25-based methods find nothing when no term of the question is in any passage
        lines.append(f"    none: {method} retrieved no passage, so the answer is the reader's guess without "
                     "evidence (another --method, e.g. dense, always retrieves)")
    elif answer.evidence[0].context.source.endswith(FALLBACK_SUFFIX):
        fallback = answer.evidence[0].context.source.removesuffix(FALLBACK_SUFFIX)
        lines.append(f"    ({method} retrieved no passage; these come from the {fallback} fallback)")
    for i, e in enumerate(answer.evidence[:show], 1):
        c = e.context
        lines.append(f" {i}. [{c.lang}] {c.title}  source={c.source} score={c.score:.3f} relevance={e.relevance:.3f}")
        where = describe(c.meta)
        if where:
            lines.append(f"    from: {where}")
        lines.append(textwrap.indent(textwrap.fill(c.text, TEXT_WIDTH), "    "))
    return lines
