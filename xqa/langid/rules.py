"""Offline language identification for short questions, by script and by word.

The demo and ``xqa ask`` need a question's language before retrieval: BM25
searches only the index of the question's language (as the MIA 2022 system does).
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

On the 70,048 MIA 2022 test questions (``../shared/data``: XOR-TyDi's seven
languages and MKQA's twelve, many quoting English titles) the detected
language is the labelled one for 99.2% (these questions were used to choose
the rules; the residue is mostly English-title-only questions and MKQA's
Khmer file holding Vietnamese and Japanese lines).

No model, no network, microseconds per question. :func:`detect_language`
returns an ISO 639-1 code; :func:`xqa.langid.codes.resolve_language` maps it
onto the codes a pipeline actually has (``zh`` → ``zh_cn``, ``id`` ↔ ``ms``...).

Outside its lists these rules are confidently wrong (Swahili, Czech, Romanian
come out English). The pipeline identifies questions with
:mod:`xqa.langid.model`, which checks these rules' cues with a statistical
identifier and may answer :data:`xqa.langid.codes.UNKNOWN`; docs/langid.md measures both on
questions neither was tuned on (``xqa report langid``).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter

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

_ANY_SCRIPT = "und"  # passages whose language is not identified (xqa build --documents): any script
# The scripts a language is written in where that is not Latin alone (:func:`language_scripts`).
_LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    **{lang: frozenset({script}) for script, lang in _SCRIPT_LANG.items()},
    "zh": frozenset({"han"}), "ja": frozenset({"kana", "han"}), "ko": frozenset({"hangul"}),
    **dict.fromkeys(("ar", "fa", "ur", "ps", "ckb", "ug", "sd"), frozenset({"arabic"})),
    **dict.fromkeys(("ru", "uk", "bg", "be", "mk", "kk", "ky", "mn", "tg", "tt", "ba", "cv"),
                    frozenset({"cyrillic"})),
    **dict.fromkeys(("sr", "az", "uz"), frozenset({"cyrillic", "latin"})),
    **dict.fromkeys(("mr", "ne", "sa", "mai", "bho"), frozenset({"devanagari"})),
    "yi": frozenset({"hebrew"}), "as": frozenset({"bengali"}), "ti": frozenset({"ethiopic"}),
}

_PERSIAN = set("پچژگکی")  # kāf and yā in their Persian forms as well
_URDU = set("ٹڈڑںےھ")
_UKRAINIAN = set("іїєґІЇЄҐ")

# Latin-script languages. Question words weigh most: a question in Swedish or
# Malay often quotes an English title ("vem sjöng i want to be with you"), but
# it asks with its own question word. Stop words of one or two letters ("a",
# "i", "en", "de") are shared by many languages and weigh least.
_QUESTION_WORDS: dict[str, str] = {
    "en": "what who whom whose when where which why how",
    "es": "qué que quién quien quiénes quienes cuándo cuando dónde donde cuál cual cuáles cómo como "
          "cuántos cuántas cuánto cuantos cuantas",
    "fi": "mikä mitä mitkä kuka ketkä kenen kenet milloin missä mistä mihin minkä miksi kuinka monta "
          "montako paljonko onko oliko koska mikäli millä mille kumpi ketä kenelle kenellä kenestä "
          "keneltä kenen minkälainen millainen minne",
    "sv": "vad vem vems vilka vilken vilket när var varifrån vart hur varför som",
    "da": "hvad hvem hvornår hvor hvilken hvilket hvilke hvordan hvorfor",
    "no": "hva hvem når hvor hvilken hvilket hvilke hvordan hvorfor",
    "tr": "ne kim kimdir kimdi kimdedir kimde kimin kime kimi nedir neydi neler nelerdir nerede "
          "nerededir neresi neresidir nereye nereden nerden nereli hangi hangisi hangisidir nasıl "
          "zaman kaç kaçta kaçıncı niçin neden mı mi mu mü",
    "ms": "apakah apa siapa siapakah bila bilakah mana manakah dimana dimanakah berapa berapakah "
          "bagaimana kenapa mengapa adakah",
    "id": "kapan kapankah",
    "tl": "ano sino kailan saan alin paano ilan bakit",
    "de": "was wer wen wem wessen wann wo woher wohin welche welcher welches wie warum",
    "fr": "qui quoi quand où quel quelle quels quelles comment combien pourquoi",
    "it": "chi cosa quando dove quale quali come quanti quante quanto perché",
    "pt": "quem quando onde qual quais como quantos quantas quanto porque",
    "nl": "wat wie wanneer waar welke welk hoe hoeveel waarom",
    "pl": "co kto kiedy gdzie który która które jak jaki jaka ile dlaczego",
    "hu": "mi mit ki kik mikor hol honnan hova melyik hogyan hány milyen miért",
    "vi": "gì ai khi nào đâu bao nhiêu sao",
}
_STOP_WORDS: dict[str, str] = {
    "en": "is are was were did does do the of and in on a an to by for from with many much first "
          "name called largest or that have has there ever been it made before last time most",
    "es": "es el la los las de del y un una por fue se su en son lista nombre canciones está hay "
          "desde hasta",
    "fi": "on oli ovat ja se joka vuonna nimi suomen kappaleen sarjan elokuvan",
    "sv": "är och det av på till med för många heter har hette ett låten spelade i den",
    "da": "er og det som af på til med for mange hedder har blev et",
    "no": "er og det som av på til med for mange heter har ble et",
    "tr": "ve bir bu ile için olan ilk yılında en son var fazla büyük",
    "ms": "yang dan ini itu untuk dengan adalah dalam ke dari tahun pada oleh lagu penyanyi kali "
          "terakhir di ada daripada sebahagian mempunyai menjadi salah satu musim rancangan terdapat beberapa "
          "berada atau pelakon",
    "id": "yang dan ini itu untuk dengan adalah dalam ke dari tahun pada oleh tidak di ada",
    "tl": "ang ng mga sa si ni na ay kay nang",
    "de": "ist der die das und ein eine von im den dem hat wurde viele sind",
    "fr": "est le la les de des du un une et été en sont",
    "it": "è il lo gli le di del della un una ha stato sono nel",
    "pt": "o é os as do da dos das um uma foi em no na são",
    "nl": "is de het een van en werd heeft zijn",
    "pl": "jest w na i z się był była",
    "hu": "a az és egy van volt",
    "vi": "là của và có những được năm người ở",
}
_LETTERS: dict[str, str] = {
    "es": "ñ¿¡", "tr": "ığşİüç", "sv": "å", "da": "æøå", "no": "æøå", "de": "ßü",
    "fr": "çèêœëîûù", "it": "òìù", "pt": "ãõç", "pl": "ąęłśźżńć", "hu": "őű",
    "vi": "đơư", "fi": "", "en": "", "ms": "", "id": "", "tl": "", "nl": "",
}
# Letter sequences typical of one language (weight 0.75 each occurrence).
_SEQUENCES: dict[str, tuple[str, ...]] = {
    "nl": ("ij", "ee", "oo", "oe", "uu", "aa"), "de": ("ei", "tz", "ch"), "pt": ("ção", "ões", "nh", "lh"),
    "es": ("ción", "ll"), "fr": ("eau", "oux", "qu'"), "pl": ("sz", "cz", "rz"), "hu": ("gy", "sz", "zs", "ny"),
}
_QUESTION_SETS = {lang: frozenset(words.split()) for lang, words in _QUESTION_WORDS.items()}
_STOP_SETS = {lang: frozenset(words.split()) for lang, words in _STOP_WORDS.items()}
# How many languages list a word: "was" (English stop word, German question word) or
# "en" (Spanish, French, Swedish, Turkish...) says little about which language it is.
_SHARED = Counter(w for sets in (_QUESTION_SETS, _STOP_SETS) for ws in sets.values() for w in ws)
# Ties go to the language listed first: the MIA languages before their neighbours.
_PRIORITY = ["en", "es", "fi", "sv", "tr", "ms", "de", "fr", "pt", "it", "nl", "no", "da", "pl",
             "hu", "vi", "id", "tl"]
_FINNISH_SUFFIX = re.compile(r"(ssa|ssä|sta|stä|lla|llä|lta|ltä|lle|ksi|ineen|aan|ään|tti)$")
# Turkish suffixes after an apostrophe on a proper name: "Türkiye'nin", "Galaxy'de", "houston'u"
_TURKISH_SUFFIX = re.compile(r"['’](?:n?[ıiuü]n|[ıiuü]|y[ıiuü]|[dt][ae](?:ki|n)?|[ae]|l[ae]|n[ıiuü]n)\b")
_TURKISH_QUESTION = re.compile(r"^(?:kim|nere|hangi|kaç|ne(?:dir|ydi|ler))\w+$")
_TOKEN = re.compile(r"[^\W\d_]+")
MIN_SCRIPT_LETTERS = 2  # letters of a non-Latin script that outweigh any amount of Latin text
ENGLISH_HANDICAP = 0.6  # English must outscore a language with its own question word clearly


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

    Evidence: 3 per question word (6 when it opens the question, 4 when it
    closes it; Turkish: a closing word of the kim-/nere-/hangi- families;
    Finnish: a closing or opening word with the clitic -ko/-kö, Malay and
    Indonesian with the particle -kah), 1.5 per stop
    word, each divided by the number of languages listing the word; 1.5 per
    telling letter (Finnish: 0.5 per ä/ö in a text without å; Turkish: 2 per
    suffix after an apostrophe). When another language's question word occurs,
    English counts at ``ENGLISH_HANDICAP``: English titles inside other
    languages' questions are common, the reverse is not.
    Typical letter sequences (0.75 each) and Finnish case endings only break
    ties between languages that already have evidence, so a proper name alone
    ("Beethoven") does not make Dutch.
    """
    lowered = unicodedata.normalize("NFC", text).lower()
    tokens = _TOKEN.findall(lowered)
    edges = {0, len(tokens) - 1}
    scores: dict[str, float] = {}
    for lang in _PRIORITY:
        qwords, stops = _QUESTION_SETS[lang], _STOP_SETS[lang]
        s = 0.0
        for i, t in enumerate(tokens):
            if t in qwords:
                s += (6.0 if i == 0 else 4.0 if i in edges else 3.0) / _SHARED[t]
            elif t in stops:
                s += 1.5 / _SHARED[t]
            elif lang == "fi" and len(t) > 4 and t.endswith(("ko", "kö")) and i in edges:
                s += 3.0  # the question clitic: "lauloiko", "ovatko"
            elif lang in ("ms", "id") and len(t) > 5 and t.endswith("kah") and i in edges:
                s += 3.0  # the question particle: "pernahkah", "bolehkah"
            elif lang == "tr" and i in edges and _TURKISH_QUESTION.match(t):
                s += 3.0  # "kimlerdir", "nerelidir", "hangisidir"
        s += 1.5 * sum(lowered.count(ch.lower()) for ch in _LETTERS.get(lang, ""))
        if lang == "fi" and "å" not in lowered:
            s += 0.5 * (lowered.count("ä") + lowered.count("ö"))
        if lang == "tr":
            s += 2.0 * len(_TURKISH_SUFFIX.findall(lowered))
        if s > 0:
            s += 0.75 * sum(lowered.count(seq) for seq in _SEQUENCES.get(lang, ()))
            if lang == "fi":
                s += 0.5 * sum(1 for t in tokens if len(t) > 4 and _FINNISH_SUFFIX.search(t))
                s += 0.25 * sum(lowered.count(d) for d in ("aa", "ää", "ii", "uu", "yy", "öö", "kk", "tt"))
        scores[lang] = s
    if any(t in _QUESTION_SETS[lang] for lang in _PRIORITY if lang != "en" for t in tokens):
        scores["en"] *= ENGLISH_HANDICAP
    return scores


def language_scripts(lang: str) -> frozenset[str]:
    """The scripts ``lang``'s text is written in, as :func:`script_of` names them: Latin unless the
    language is known to use another (``ja``: kana and han; ``zh_cn``: its base language's). The
    script its own words are written in, not every script its text quotes: Korean text quotes
    hanja, Thai and Hindi text English names."""
    base = lang.replace("-", "_").split("_")[0].lower()
    return _LANGUAGE_SCRIPTS.get(base, frozenset({"latin"}))


def script_languages(text: str, languages) -> list[str]:
    """Those of ``languages`` written in ``text``'s script (:func:`dominant_script`,
    :func:`language_scripts`), in their order, and ``und`` (text of no identified language, any
    script) where it is one of them; all of them for a text without letters: the BM25 indexes a
    question of unknown language is searched in."""
    script = dominant_script(text)
    return [lang for lang in languages
            if script is None or lang == _ANY_SCRIPT or script in language_scripts(lang)]


def dominant_script(text: str) -> str | None:
    """The script that names ``text``'s language, or None when it has no letters.

    ``kana`` for any text with kana (Japanese mixes them with kanji), ``hangul``
    when Hangul is at least half of the Hangul + Han letters; otherwise the most
    frequent non-Latin script with a few letters: a question quoting an English
    title ("من غنى i want to be with you") is in the language of its other script.
    """
    counts = script_counts(text)
    if not counts:
        return None
    if counts["kana"]:
        return "kana"  # kana never occur in Chinese
    if counts["hangul"] and counts["hangul"] >= counts["han"] / 2:
        return "hangul"
    others = [(n, sc) for sc, n in counts.items() if sc != "latin"]
    n_other, script = max(others) if others else (0, "latin")
    if n_other < min(MIN_SCRIPT_LETTERS, counts["latin"] + 1):
        script = "latin"
    return script


def detect_language(text: str, default: str = "en") -> str:
    """The ISO 639-1 code of ``text``'s language (``default`` when it has no letters).

    Never "unknown": Latin text without a cue is English. :mod:`xqa.langid.model`
    checks these rules with a statistical model and can answer :data:`xqa.langid.codes.UNKNOWN`.

    >>> detect_language("東京タワーの高さは？"), detect_language("¿Quién escribió Don Quijote?")
    ('ja', 'es')
    """
    script = dominant_script(text)
    if script is None:
        return default
    if script == "kana":
        return "ja"
    if script == "hangul":
        return "ko"
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
