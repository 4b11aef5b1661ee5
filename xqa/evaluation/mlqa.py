"""EM and token F1 by the rules of the MLQA and SQuAD v1.1 evaluation scripts.

Published extractive readers (MLQA, XQuAD, SQuAD, TyDi GoldP) report this metric, so a
reader's gold-paragraph scores are read next to theirs only when scored the same way
(reimplemented from the scripts' documented rules, not copied):

1. lower-case;
2. remove punctuation: every Unicode character of category P*, plus ASCII
   ``string.punctuation`` (SQuAD v1.1's script removes only the ASCII set; on English text
   the two differ only for characters like ``–`` or curly quotes);
3. remove articles as words, per language: English a/an/the; Spanish un/una/unos/unas/
   el/la/los/las; German ein/eine/einen/einem/eines/einer/der/die/das/den/dem/des;
   Vietnamese của/là/cái/chiếc/những; Arabic the prefix ال (as MLQA's script does it: every
   occurrence is replaced by a space); none for Hindi and Chinese;
4. tokens: white-space tokens; for Chinese, each Han character (U+4E00–U+9FA5) and each
   punctuation character is a token of its own, the runs between are split on white space;
5. EM: equal token sequences; F1: the bag-of-tokens F1 (0 when no token is shared); the
   score of a question is the maximum over its gold answers.

The scripts cover English and MLQA's 7 languages. Other languages are scored here with
rules 1, 2, 4 (white-space tokens) and no articles, as the SQuAD script would score them:
for text written without spaces (Japanese, Thai) F1 is then close to exact match.
Scores are fractions (0–1).
"""
from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Iterable

_ARTICLES = {
    "en": r"\b(a|an|the)\b",
    "es": r"\b(un|una|unos|unas|el|la|los|las)\b",
    "de": r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b",
    "vi": r"\b(của|là|cái|chiếc|những)\b",
    "ar": r"\sال^|ال",
}
_HAN = re.compile(r"[\u4e00-\u9fa5]")


@lru_cache(maxsize=1)
def _punctuation() -> frozenset[str]:
    chars = {chr(i) for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)).startswith("P")}
    return frozenset(chars | set(string.punctuation))


def _lang(lang: str) -> str:
    return "zh" if lang.lower().startswith("zh") else lang.lower()


def _mixed_segmentation(text: str, punct: frozenset[str]) -> list[str]:
    out, run = [], ""
    for ch in text:
        if _HAN.match(ch) or ch in punct:
            out += run.split()
            run = ""
            out.append(ch)
        else:
            run += ch
    return out + run.split()


def tokens(text: str, lang: str) -> list[str]:
    """The normalized tokens of ``text`` under the rules above."""
    lang = _lang(lang)
    punct = _punctuation()
    text = "".join(ch for ch in text.lower() if ch not in punct)
    if lang in _ARTICLES:
        text = re.sub(_ARTICLES[lang], " ", text)
    parts = _mixed_segmentation(text, punct) if lang == "zh" else text.split()
    return [t for t in parts if t.strip()]


def exact_match(prediction: str, answer: str, lang: str) -> float:
    return float(tokens(prediction, lang) == tokens(answer, lang))


def f1(prediction: str, answer: str, lang: str) -> float:
    p, g = tokens(prediction, lang), tokens(answer, lang)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def score(prediction: str, answers: Iterable[str], lang: str) -> tuple[float, float]:
    """``(EM, F1)`` of one prediction: the maximum over the gold answers (0, 0 without any)."""
    answers = list(answers)
    if not answers:
        return 0.0, 0.0
    return (max(exact_match(prediction, a, lang) for a in answers),
            max(f1(prediction, a, lang) for a in answers))
