"""A document's language, by xqa's language identification (:mod:`xqa.langid`).

Up to three samples of the text (its beginning, middle and end, :data:`SAMPLE` characters
each) are identified. When they agree, that is the document's language. When they disagree
the document is **mixed**: each of its passages then gets its own identified language. When
none is identified (or only as a language xqa has no code for), the document is **unknown**
and its passages get ``und``, which BM25 indexes on their own and every question whose
language is not identified also searches. Mixed and unknown documents are listed in the
build report; ``--lang`` names the language of every document instead.
"""
from __future__ import annotations

from xqa.records import UNKNOWN_LANG

SAMPLE = 400
MIXED = "mixed"


def text_script(text: str) -> str | None:
    """The script most of ``text``'s letters are written in (kanji and kana counted together
    as ``kana`` when kana are at least a tenth of them, else ``han``), None without letters.
    Unlike a question's (:func:`xqa.langid.rules.dominant_script`), a document's script is
    the majority's: a Thai article quoting a Japanese word stays Thai."""
    from xqa.langid.rules import script_counts

    counts = script_counts(text)
    if not counts:
        return None
    cjk = counts.pop("han", 0) + counts.pop("kana", 0)
    kana = script_counts(text)["kana"]
    if cjk:
        counts["kana" if kana >= 0.1 * cjk else "han"] = cjk
    return counts.most_common(1)[0][0]


def identify_text(text: str) -> str:
    """The code of ``text``'s language, one xqa knows, or ``und``: its script's language where
    the script names one (Thai, Hangul, kana...), else lingua over the letters of that script
    (xqa's identifier, :mod:`xqa.langid.model`), else the script and word rules."""
    from xqa.langid import LANGUAGE_NAMES, detect_language
    from xqa.langid.model import SHARED_SCRIPTS, model_scores, script_letters

    script = text_script(text)
    if script is None:
        return UNKNOWN_LANG
    letters = script_letters(text, script) if script != "kana" else text
    if script in SHARED_SCRIPTS:
        scores = model_scores(letters)
        code = (scores[0][0] if scores and scores[0][1] >= 0.5 else UNKNOWN_LANG) if scores is not None \
            else detect_language(letters)
    else:
        code = detect_language(letters)
    return code if code in LANGUAGE_NAMES else UNKNOWN_LANG


def samples(text: str, size: int = SAMPLE) -> list[str]:
    """The beginning, middle and end of ``text`` (one sample when it is short), cut at spaces
    where there are any."""
    if len(text) <= 2 * size:
        return [text[: 2 * size]]
    mid = len(text) // 2 - size // 2
    out = []
    for start in (0, mid, len(text) - size):
        s = text[start: start + size]
        if start and " " in s[:40]:
            s = s[s.index(" ") + 1:]
        out.append(s)
    return out


def document_language(text: str) -> str:
    """The language code of a document, :data:`MIXED`, or ``und``."""
    found = {identify_text(s) for s in samples(text)}
    known = found - {UNKNOWN_LANG}
    if not known:
        return UNKNOWN_LANG
    if len(known) == 1:
        return known.pop()
    return MIXED
