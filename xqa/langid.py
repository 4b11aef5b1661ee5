"""Offline language identification for short questions, by script and by word.

The demo and ``xqa ask`` need a question's language before retrieval: BM25
searches only the index of the question's language (DESIGN.md, data flow).
Questions are short (a few words), which is where statistical identifiers are
weakest and where two cheap signals are strongest:

1. **Script.** Most MIA languages own a script: Bengali, Telugu, Tamil, Thai,
   Khmer, Hangul (ko), kana (ja), Hebrew, Greek... Within a shared script a few
   letters decide: Japanese is any text with kana (kanji-only text reads as
   Chinese), Persian and Urdu add letters to the Arabic alphabet, Ukrainian
   adds і ї є ґ to Cyrillic.
2. **Latin script: question words, stop words and letters.** Each Latin-script
   language has a short list of frequent words (its question words first) and
   of letters other languages rarely use (ñ ¿ for Spanish, ı ğ ş for Turkish,
   å for Swedish/Danish/Norwegian, æ ø for Danish/Norwegian...). The language
   with the highest score wins; English when nothing matches.

No model, no network, microseconds per question. :func:`detect_language`
returns an ISO 639-1 code; :func:`resolve_language` maps it onto the codes a
pipeline actually has (``zh`` → ``zh_cn``, ``id`` ↔ ``ms``...).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Iterable

# English names of every code this module can return (the demo shows them).
LANGUAGE_NAMES: dict[str, str] = {
    "am": "Amharic", "ar": "Arabic", "bn": "Bengali", "da": "Danish", "de": "German",
    "el": "Greek", "en": "English", "es": "Spanish", "fa": "Persian", "fi": "Finnish",
    "fr": "French", "gu": "Gujarati", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ka": "Georgian",
    "km": "Khmer", "kn": "Kannada", "ko": "Korean", "lo": "Lao", "ml": "Malayalam",
    "ms": "Malay", "my": "Burmese", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi",
    "pl": "Polish", "pt": "Portuguese", "ru": "Russian", "si": "Sinhala", "sv": "Swedish",
    "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
    "zh_cn": "Chinese (simplified)", "zh_hk": "Chinese (Hong Kong)", "zh_tw": "Chinese (traditional)",
}

# (first, last code point, script); the order does not matter, ranges are disjoint.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x005A, "latin"), (0x0061, 0x007A, "latin"), (0x00C0, 0x024F, "latin"),
    (0x1E00, 0x1EFF, "latin"),
    (0x0370, 0x03FF, "greek"), (0x1F00, 0x1FFF, "greek"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0530, 0x058F, "armenian"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"), (0x0750, 0x077F, "arabic"), (0x08A0, 0x08FF, "arabic"),
    (0xFB50, 0xFDFF, "arabic"), (0xFE70, 0xFEFF, "arabic"),
    (0x0900, 0x097F, "devanagari"), (0x0980, 0x09FF, "bengali"), (0x0A00, 0x0A7F, "gurmukhi"),
    (0x0A80, 0x0AFF, "gujarati"), (0x0B80, 0x0BFF, "tamil"), (0x0C00, 0x0C7F, "telugu"),
    (0x0C80, 0x0CFF, "kannada"), (0x0D00, 0x0D7F, "malayalam"), (0x0D80, 0x0DFF, "sinhala"),
    (0x0E00, 0x0E7F, "thai"), (0x0E80, 0x0EFF, "lao"), (0x1000, 0x109F, "myanmar"),
    (0x10A0, 0x10FF, "georgian"), (0x1200, 0x139F, "ethiopic"),
    (0x1100, 0x11FF, "hangul"), (0x3130, 0x318F, "hangul"), (0xAC00, 0xD7AF, "hangul"),
    (0x1780, 0x17FF, "khmer"), (0x19E0, 0x19FF, "khmer"),
    (0x3040, 0x309F, "kana"), (0x30A0, 0x30FF, "kana"), (0x31F0, 0x31FF, "kana"),
    (0xFF66, 0xFF9F, "kana"),
    (0x3400, 0x4DBF, "han"), (0x4E00, 0x9FFF, "han"), (0xF900, 0xFAFF, "han"),
    (0x20000, 0x2FA1F, "han"),
)
_STARTS = sorted(_RANGES)

# A script that names its language outright.
_SCRIPT_LANG = {
    "greek": "el", "armenian": "hy", "hebrew": "he", "devanagari": "hi", "bengali": "bn",
    "gurmukhi": "pa", "gujarati": "gu", "tamil": "ta", "telugu": "te", "kannada": "kn",
    "malayalam": "ml", "sinhala": "si", "thai": "th", "lao": "lo", "myanmar": "my",
    "georgian": "ka", "ethiopic": "am", "hangul": "ko", "khmer": "km",
}

_PERSIAN = set("پچژگکی")  # kāf and yā in their Persian forms as well
_URDU = set("ٹڈڑںےھ")
_UKRAINIAN = set("іїєґІЇЄҐ")

# Latin-script languages: frequent words (question words first) and telling letters.
_WORDS: dict[str, str] = {
    "en": "what who whom whose when where which why how is are was were did does do the of and "
          "in on a an to by for from with many much first name called largest",
    "es": "qué que quién quien quiénes cuándo cuando dónde donde cuál cual cuáles cómo como "
          "cuántos cuántas cuánto es el la los las de del y un una por fue se su en son",
    "fi": "mikä mitä mikä mitkä kuka ketkä kenen milloin missä mistä mihin minkä miksi kuinka "
          "monta montako paljonko onko oliko on oli ovat ja se joka vuonna nimi suomen",
    "sv": "vad vem vems när var vart vilken vilket vilka hur är och det som av på till med "
          "för många heter har hette ett",
    "da": "hvad hvem hvornår hvor hvilken hvilket hvilke hvordan er og det som af på til med "
          "for mange hedder har blev et",
    "no": "hva hvem når hvor hvilken hvilket hvilke hvordan er og det som av på til med for "
          "mange heter har ble et",
    "tr": "ne kim kimdir nedir nerede nereye nereden hangi hangisi nasıl zaman kaç kaçta mı mi "
          "mu mü ve bir bu ile için olan ilk yılında",
    "ms": "apakah apa siapa siapakah bila bilakah bilakah mana manakah di berapa berapakah yang "
          "dan ini itu untuk dengan adalah dalam ke dari bagaimana kenapa mengapa tahun pada oleh",
    "id": "apakah apa siapa siapakah kapan kapankah mana di berapa yang dan ini itu untuk dengan "
          "adalah dalam ke dari bagaimana mengapa tahun pada oleh tidak",
    "tl": "ano sino kailan saan alin paano ilan bakit ang ng mga sa si ni na ay kay nang",
    "de": "was wer wen wem wessen wann wo woher wohin welche welcher welches wie ist der die das "
          "und ein eine von im den dem hat wurde viele sind",
    "fr": "qui que quoi quand où quel quelle quels quelles comment combien est le la les de des "
          "du un une et été en sont",
    "it": "chi che cosa quando dove quale quali come quanti quante quanto è il lo gli le di del "
          "della un una ha stato sono nel",
    "pt": "o que quem quando onde qual quais como quantos quantas quanto é os as do da dos das "
          "um uma foi em no na são",
    "nl": "wat wie wanneer waar welke welk hoe hoeveel is de het een van en werd heeft zijn",
    "pl": "co kto kiedy gdzie który która które jak jaki jaka ile jest w na i z się był była",
    "hu": "mi mit ki kik mikor hol honnan hova melyik hogyan hány milyen a az és egy van volt",
    "vi": "gì ai khi nào ở đâu là của và có những được bao nhiêu năm người",
}
_LETTERS: dict[str, str] = {
    "es": "ñ¿¡", "tr": "ığşİ", "sv": "å", "da": "æøå", "no": "æøå", "de": "ßü",
    "fr": "çèêœëîûù", "it": "òìù", "pt": "ãõç", "pl": "ąęłśźżńć", "hu": "őű",
    "vi": "đơư", "fi": "", "en": "", "ms": "", "id": "", "tl": "", "nl": "",
}
# Letter sequences typical of one language (weight 0.75 each occurrence).
_SEQUENCES: dict[str, tuple[str, ...]] = {
    "nl": ("ij", "ee", "oo", "oe", "uu", "aa"), "de": ("ei", "tz", "ch"), "pt": ("ção", "ões", "nh", "lh"),
    "es": ("ción", "ll"), "fr": ("eau", "oux", "qu'"), "pl": ("sz", "cz", "rz"), "hu": ("gy", "sz", "zs", "ny"),
}
_WORD_SETS = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
# Ties go to the language listed first: the MIA languages before their neighbours.
_PRIORITY = ["en", "es", "fi", "sv", "tr", "ms", "de", "fr", "pt", "it", "nl", "no", "da", "pl",
             "hu", "vi", "id", "tl"]
_FINNISH_SUFFIX = re.compile(r"(ssa|ssä|sta|stä|lla|llä|lta|ltä|lle|ksi|ineen|aan|ään|tti)$")
_TOKEN = re.compile(r"[^\W\d_]+")


def script_of(ch: str) -> str | None:
    """The script of one character (``latin``, ``han``, ``kana``, ...), or None for others."""
    cp = ord(ch)
    lo, hi = 0, len(_STARTS)
    while lo < hi:  # binary search over the range starts
        mid = (lo + hi) // 2
        if _STARTS[mid][0] <= cp:
            lo = mid + 1
        else:
            hi = mid
    if lo and _STARTS[lo - 1][0] <= cp <= _STARTS[lo - 1][1]:
        return _STARTS[lo - 1][2]
    return None


def script_counts(text: str) -> Counter:
    """How many letters of ``text`` each script holds."""
    return Counter(s for s in map(script_of, text) if s is not None)


def latin_scores(text: str) -> dict[str, float]:
    """A score per Latin-script language.

    Evidence: 2 per known word, 1.5 per telling letter (Finnish: 0.5 per ä/ö
    in a text without å). Typical letter sequences (0.75 each) and Finnish case
    endings / doubled letters only break ties between languages that already
    have evidence, so a proper name alone ("Beethoven") does not make Dutch.
    """
    lowered = unicodedata.normalize("NFC", text).lower()
    tokens = _TOKEN.findall(lowered)
    scores: dict[str, float] = {}
    for lang in _PRIORITY:
        words = _WORD_SETS[lang]
        s = 2.0 * sum(t in words for t in tokens)
        s += 1.5 * sum(lowered.count(ch.lower()) for ch in _LETTERS.get(lang, ""))
        if lang == "fi" and "å" not in lowered:
            s += 0.5 * (lowered.count("ä") + lowered.count("ö"))
        if s > 0:
            s += 0.75 * sum(lowered.count(seq) for seq in _SEQUENCES.get(lang, ()))
            if lang == "fi":
                s += 0.5 * sum(1 for t in tokens if len(t) > 4 and _FINNISH_SUFFIX.search(t))
                s += 0.25 * sum(lowered.count(d) for d in ("aa", "ää", "ii", "uu", "yy", "öö", "kk", "tt"))
        scores[lang] = s
    return scores


def detect_language(text: str, default: str = "en") -> str:
    """The ISO 639-1 code of ``text``'s language (``default`` when it has no letters).

    >>> detect_language("東京タワーの高さは？"), detect_language("¿Quién escribió Don Quijote?")
    ('ja', 'es')
    """
    counts = script_counts(text)
    if not counts:
        return default
    if counts["kana"]:
        return "ja"  # kana never occur in Chinese; Japanese mixes them with kanji
    if counts["hangul"] and counts["hangul"] >= counts["han"] / 2:
        return "ko"
    script, _ = max(counts.items(), key=lambda kv: (kv[1], kv[0] == "latin"))
    if script == "han":
        return "zh"
    if script == "arabic":
        if any(ch in _URDU for ch in text):
            return "ur"
        return "fa" if any(ch in _PERSIAN for ch in text) else "ar"
    if script == "cyrillic":
        return "uk" if any(ch in _UKRAINIAN for ch in text) else "ru"
    if script in _SCRIPT_LANG:
        return _SCRIPT_LANG[script]
    scores = latin_scores(text)
    best = max(_PRIORITY, key=lambda lang: (scores[lang], -_PRIORITY.index(lang)))
    return best if scores[best] > 0 else "en"  # Latin text without a cue: English is likeliest


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
    """``"ja"`` → ``"Japanese"``; unknown codes come back unchanged."""
    return LANGUAGE_NAMES.get(code, code)
