"""Cross-script BM25: one index over every language, in romanized tokens.

The per-language BM25 indexes answer a question only from passages in its own
language. A name, though, is written in every script: ``바코바 니라타``,
``Бакоба Нирата``, ``バコバ・ニラタ`` and ``Bakoba Nirata`` are one person.
This analyzer writes any script in ASCII (``anyascii``: Hangul, kana and
Cyrillic by their standard romanizations, Han by pinyin, Arabic letter by
letter) and makes two tokens of each word:

* the romanized word itself (``bakoba``);
* its consonant skeleton, prefixed ``~`` (``~bkb``): vowels (and ``w``/``y``,
  which Arabic script uses for long vowels) dropped, ``l`` read as ``r``.
  Romanizations disagree mostly in vowels: an abjad writes few of them
  (``كوكا`` → ``kwk``), Indic scripts carry an inherent ``a`` that the
  romanizer may drop (``క`` → ``k``), and Chinese transliteration has no
  ``r`` (``拉`` → ``la``).

Runs of kana and of Han characters are cut apart first: Japanese writes a
katakana name straight into hiragana particles (``ナルニ・ロニの``), which
would otherwise make one word.

All passages go into ONE index (the pseudo-language :data:`ALL`), and every
question is searched in it whatever its language: the hits are passages about
the question's names in any language (docs/sparse.md measures it on the embedded
world and on MLQA).
Numbers stay as they are (no skeleton).
"""
from __future__ import annotations

import re
import unicodedata

ANALYZER = "xqa:roman"
DESCRIPTION = ("cross-script: every script romanized (anyascii), lower-cased words "
               "plus their consonant skeletons (~bkb)")
# The folder (and pseudo-language) of the single all-language index; not a language code.
ALL = "_all"

_CJK_RUNS = re.compile(r"([\u3040-\u309f]+|[\u30a0-\u30ff\u31f0-\u31ff]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")
_WORD = re.compile(r"[a-z0-9]+")
_DROPPED = frozenset("aeiouwy")


class RomanAnalyzer:
    """The Python-side analyzer recorded as :data:`ANALYZER` (passages and queries alike)."""

    name = ANALYZER

    def analyze(self, text: str) -> list[str]:
        return roman_tokens(text)


def romanize(text: str) -> str:
    """``text`` in lower-case ASCII, kana and Han runs set apart by spaces."""
    from anyascii import anyascii

    text = _CJK_RUNS.sub(r" \1 ", unicodedata.normalize("NFKC", text))
    return anyascii(text).lower()


def skeleton(word: str) -> str:
    """The consonant skeleton of a romanized word (the word itself if it has no consonant)."""
    s = "".join(c for c in word.replace("l", "r") if c not in _DROPPED)
    return s or word


def roman_tokens(text: str) -> list[str]:
    """Index / query tokens of ``text``: each romanized word, then ``~`` + its skeleton (not for numbers)."""
    out = []
    for word in _WORD.findall(romanize(text)):
        out.append(word)
        if not word.isdigit():
            out.append("~" + skeleton(word))
    return out


__all__ = ["ALL", "ANALYZER", "DESCRIPTION", "RomanAnalyzer", "roman_tokens", "romanize", "skeleton"]
