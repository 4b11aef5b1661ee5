"""Language codes: their names, and how a code maps onto the languages a pipeline has.

Language identification (:mod:`xqa.langid.rules`, :mod:`xqa.langid.model`)
answers ISO 639-1 codes; a pipeline's languages are the codes of its BM25
indexes, some of them variants (``zh_cn``) or stand-ins (``ms`` for ``id``).
"""
from __future__ import annotations

from collections.abc import Iterable

from xqa.records import UNKNOWN_LANG

# A question whose language is not identified (BCP 47 "undetermined"): BM25 searches the index of every language
# written in its script.
UNKNOWN = UNKNOWN_LANG

# English names of every code language identification can return (the demo shows them), and of the other
# languages of the sets xqa reads: the language codes xqa.io accepts in a user's file.
LANGUAGE_NAMES: dict[str, str] = {
    UNKNOWN: "unknown language",
    "am": "Amharic", "ar": "Arabic", "bn": "Bengali", "da": "Danish", "de": "German",
    "el": "Greek", "en": "English", "es": "Spanish", "fa": "Persian", "fi": "Finnish",
    "fr": "French", "gu": "Gujarati", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ka": "Georgian",
    "km": "Khmer", "kn": "Kannada", "ko": "Korean", "lo": "Lao", "ml": "Malayalam",
    "ms": "Malay", "my": "Burmese", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "si": "Sinhala",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
    "zh_cn": "Chinese (simplified)", "zh_hk": "Chinese (Hong Kong)", "zh_tw": "Chinese (traditional)",
}


_ALIASES: dict[str, tuple[str, ...]] = {
    "zh": ("zh_cn", "zh_tw", "zh_hk"), "zh_cn": ("zh",), "zh_tw": ("zh", "zh_hk"), "zh_hk": ("zh", "zh_tw"),
    "ms": ("id",), "id": ("ms",), "no": ("nb", "nn"), "nb": ("no",), "tl": ("fil",), "he": ("iw",),
}


def resolve_language(code: str, available: Iterable[str]) -> str:
    """Map a detected ``code`` onto the language codes a pipeline has.

    ``zh`` becomes ``zh_cn`` (or another Chinese variant) when only that exists,
    Malay and Indonesian stand in for each other; otherwise ``code`` unchanged,
    so a language without a BM25 index still reaches the (multilingual) dense side.
    """
    available = list(available)
    if not available or code in available:
        return code
    for alt in _ALIASES.get(code, ()):
        if alt in available:
            return alt
    return code


def language_name(code: str) -> str:
    """``"ja"`` → ``"Japanese"``; a code xqa has no name for, lingua's name where lingua knows the
    code (it identifies languages xqa has no index for: ``"la"`` → ``"Latin"``); else the code."""
    if code in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[code]
    try:
        from lingua import IsoCode639_1, Language

        return Language.from_iso_code_639_1(IsoCode639_1.from_str(code)).name.title()
    except (ImportError, ValueError, AttributeError):
        return code


def pipeline_language(code: str, languages: Iterable[str] = ()) -> str:
    """``code`` mapped onto ``languages`` (:func:`resolve_language`), or :data:`UNKNOWN`
    when they have neither it nor a stand-in; any code when ``languages`` is empty."""
    languages = list(languages)
    resolved = resolve_language(code, languages)
    return resolved if not languages or resolved in languages else UNKNOWN


def searched_language(found: str, languages: Iterable[str] = ()) -> tuple[str, str]:
    """What a question identified as ``found`` is searched as, :func:`pipeline_language`, and the
    language it reads as where that is none of ``languages`` (searched as :data:`UNKNOWN`), else
    ``""``: ``("und", "fr")`` for French in a pipeline without it, ``("und", "")`` for a question
    identified as nothing."""
    searched = pipeline_language(found, languages)
    return searched, found if searched == UNKNOWN and found != UNKNOWN else ""
