"""A document's language, by xqa's language identification (:mod:`xqa.langid`).

Up to three samples of the text (its beginning, middle and end, :data:`SAMPLE` characters
each; in a text shorter than two samples, each paragraph of at least :data:`SHORT_PARAGRAPH`
characters) are identified. When they agree, that is the document's language. When they disagree
the document is **mixed**: its paragraphs are identified one by one, and each passage holds
paragraphs of one language (:func:`xqa.documents.collect.language_runs`). When
none is identified (or only as a language xqa has no code for), the document is **unknown**
and its passages get ``und``, which BM25 indexes on their own and every question whose
language is not identified also searches. Mixed and unknown documents are listed in the
build report; ``--lang`` names the language of every document instead.
"""
from __future__ import annotations

import re

from xqa.records import UNKNOWN_LANG

SAMPLE = 400
SHORT_PARAGRAPH = 60   # a short text's paragraphs identified alone (a heading or a number is too short to tell)
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


#: lingua's confidence in its best language at which that language is taken without the rules
CONFIDENT = 0.5

#: a letter outside ASCII held by fewer than this share of a text's words is a stranger's
RARE_LETTER = 0.1


def common_words(text: str) -> str:
    """``text`` without the words that hold a letter few of its words hold (fewer than
    :data:`RARE_LETTER` of them, in a text of 20 words or more): lingua narrows its languages to
    those whose alphabet has every letter it sees, so one transliterated name in an English
    paragraph ("the Mahāyāna Mahāparinirvāṇa Sūtra") would make it Tagalog with confidence 1.0.
    A text most of whose words hold such letters (Vietnamese) is left whole."""
    from collections import Counter

    words = text.split()
    if len(words) < 20:
        return text
    held = Counter(ch for w in words for ch in set(w) if ord(ch) > 127 and ch.isalpha())
    rare = {ch for ch, n in held.items() if n < RARE_LETTER * len(words)}
    kept = [w for w in words if rare.isdisjoint(w)]
    return " ".join(kept) if rare and 2 * len(kept) >= len(words) else text


def identify_text(text: str, rules_confirm: bool = True) -> str:
    """The code of ``text``'s language, one xqa knows, or ``und``: its script's language where
    the script names one (Thai, Hangul, kana...), else lingua over the letters of that script
    (xqa's identifier, :mod:`xqa.langid.model`; read again without the words of letters few
    others hold where its confident answer is not the rules', :func:`_second_reading`) — its
    best language where it gives it at least
    :data:`CONFIDENT`, or where the script and word rules name the same one (a short text spreads
    lingua's confidence over its languages: "Der Eiffelturm ist 330 Meter hoch." gets 0.21 for
    German) — else, without lingua, the rules. ``rules_confirm=False``: lingua's confident answer
    on all the letters, alone (``xqa report langid --documents`` compares the two)."""
    from xqa.langid import LANGUAGE_NAMES, detect_language
    from xqa.langid.model import SHARED_SCRIPTS, model_scores, script_letters

    script = text_script(text)
    if script is None:
        return UNKNOWN_LANG
    letters = script_letters(text, script) if script != "kana" else text
    if script in SHARED_SCRIPTS:
        scores = model_scores(letters)
        if rules_confirm and scores and scores[0][1] >= CONFIDENT:
            scores = _second_reading(letters, scores)
        if scores is None:
            code = detect_language(letters)
        elif scores and (scores[0][1] >= CONFIDENT
                         or rules_confirm and detect_language(letters) == scores[0][0]):
            code = scores[0][0]
        else:
            code = UNKNOWN_LANG
    else:
        code = detect_language(letters)
    return code if code in LANGUAGE_NAMES else UNKNOWN_LANG


def _second_reading(letters: str, scores: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """lingua's ``scores`` of ``letters``, or, where its confident answer is not the rules' and
    its reading without the words of rare letters (:func:`common_words`) is, that reading: a few
    transliterated names must not outvote the rest of an English paragraph, and a letter that
    marks its language (Spanish ñ, Vietnamese ạ) is not set aside where the rules agree."""
    from xqa.langid import detect_language
    from xqa.langid.model import model_scores

    common = common_words(letters)
    if common == letters:
        return scores
    rule = detect_language(letters)
    if rule == scores[0][0]:
        return scores
    again = model_scores(common)
    return again if again and again[0][0] == rule else scores


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
    """The language code of a document, :data:`MIXED`, or ``und``. A short text (one sample) whose
    paragraphs of :data:`SHORT_PARAGRAPH` characters or more are several is told by those (a
    bilingual note)."""
    parts = samples(text)
    if len(parts) == 1:
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= SHORT_PARAGRAPH]
        parts = paragraphs if len(paragraphs) > 1 else parts
    found = {identify_text(s) for s in parts}
    known = found - {UNKNOWN_LANG}
    if not known:
        return UNKNOWN_LANG
    if len(known) == 1:
        return known.pop()
    return MIXED
