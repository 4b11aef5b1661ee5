"""Language codes the evaluation knows, and which tokenizer each one gets.

An unknown code is an error rather than a silent white-space split: a typo such
as ``jp`` for ``ja`` would otherwise score Japanese without MeCab and nobody
would notice. The known set is the union of

* the codes of the official MIA 2022 scripts (their ``lang_dic``: XOR-TyDi and
  all 26 MKQA languages, Chinese as ``zh_cn`` / ``zh_hk`` / ``zh_tw``),
* the MIA 2022 surprise languages (Tagalog ``tl``, Tamil ``ta``),
* MLQA and XQuAD (which add ``hi``, ``el``, ``ro`` and a bare ``zh``),
* the embedded world (``xqa.world``: ar bn en es fi ja ko ru te zh, Chinese as a bare ``zh``).
"""
from __future__ import annotations

from xqa.errors import XqaError

#: The codes of the official scripts' ``lang_dic`` (eval_xor_full.py / eval_mkqa_all.py).
OFFICIAL_LANGUAGES = frozenset({
    "te", "sw", "th", "fi", "id", "ja", "ru", "ar", "en", "bn", "ko", "es", "he", "sv",
    "da", "de", "hu", "it", "km", "ms", "nl", "no", "pt", "tr", "vi", "fr", "pl",
    "zh_cn", "zh_hk", "zh_tw",
})

#: The 14 languages scored in the MIA 2022 shared task.
MIA_LANGUAGES = frozenset({"ar", "bn", "en", "es", "fi", "ja", "km", "ko", "ms", "ru", "sv",
                           "te", "tr", "zh_cn"})

MIA_SURPRISE_LANGUAGES = frozenset({"tl", "ta"})
MLQA_LANGUAGES = frozenset({"ar", "de", "en", "es", "hi", "vi", "zh"})
XQUAD_LANGUAGES = frozenset({"ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh"})

KNOWN_LANGUAGES = frozenset(OFFICIAL_LANGUAGES | MIA_LANGUAGES | MIA_SURPRISE_LANGUAGES
                            | MLQA_LANGUAGES | XQUAD_LANGUAGES)

#: Tokenizer per language in the official mode: exactly the codes the scripts test for.
OFFICIAL_TOKENIZERS = {
    "ja": "mecab",
    "zh_cn": "jieba",
    "zh_hk": "jieba",
    "zh_tw": "jieba",
    "th": "newmm",
    "km": "khmer",
}

#: The language-aware mode also segments a bare ``zh`` (MLQA, the embedded world).
LANG_AWARE_TOKENIZERS = {**OFFICIAL_TOKENIZERS, "zh": "jieba"}

#: Scripts written without spaces between words (plus Korean, whose particles
#: attach to nouns): DPR's regex tokenizer cannot find an answer inside them.
UNSEGMENTED_LANGUAGES = frozenset({"ja", "zh", "zh_cn", "zh_hk", "zh_tw", "th", "km", "ko"})

MODES = ("official", "lang_aware")


def check_language(lang: object) -> str:
    """Return ``lang`` if it is a known code; raise ``XqaError`` naming the known set otherwise."""
    if not isinstance(lang, str) or lang not in KNOWN_LANGUAGES:
        known = " ".join(sorted(KNOWN_LANGUAGES))
        raise XqaError(f"unknown language code {lang!r}; known codes: {known}")
    return lang


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise XqaError(f"unknown evaluation mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode


def tokenizer_for(lang: str, mode: str = "official") -> str:
    """Name of the word segmenter for ``lang``: mecab, jieba, newmm, khmer or whitespace."""
    check_language(lang)
    table = OFFICIAL_TOKENIZERS if check_mode(mode) == "official" else LANG_AWARE_TOKENIZERS
    return table.get(lang, "whitespace")
