"""Language identification that may answer "unknown": the rules' cues checked by a model.

:func:`xqa.langid.rules.detect_language` (script rules and Latin-script word lists)
is exact where a script names one language and where a question opens with a
listed question word, and confidently wrong outside its lists (Swahili,
Czech or Romanian come out English, Macedonian Russian). A statistical
identifier, lingua (``lingua-language-detector``: 75 languages, its n-gram
models inside the wheel, no network), knows those languages but stumbles over
the proper names that fill short questions ("Who founded Mathematische
Nachrichten?" reads as German). :func:`identify` combines them:

1. No letters: :data:`UNKNOWN`. A script of one language (Hangul, kana,
   Bengali, Thai, Khmer...) decides alone, as in the rules.
2. Shared scripts (Latin, Cyrillic, Arabic, Han, Devanagari): lingua scores
   the text's letters of that script (over all its languages) and the rules
   name a *cue*: for Latin text, the language of a question word in the text
   (the rules' lists plus Swahili's), else none; for the other scripts, the
   rules' answer (``ru``/``uk``, ``ar``/``fa``/``ur``, ``zh``, ``hi``).
3. The cue stands unless lingua gives another language at least
   :data:`VETO` of its confidence; Malay and Indonesian, which share their
   question words, go by lingua. Without a cue, lingua's best language.

:func:`identify_language` then maps the code onto a pipeline's languages
(``zh`` → ``zh_cn``, ``id`` ↔ ``ms``); a language the pipeline lacks becomes
:data:`UNKNOWN`, and BM25 then searches the index of every language written in the
question's script. The threshold
was chosen on train splits; docs/langid.md has the measurement
(``xqa report langid``).

lingua is imported on first use, never at import time. Its models load per
language the first time a question could be in it (all Latin-script languages
at the first Latin question: seconds and ~1 GB); :func:`warm_up` loads them all
ahead.
Without lingua installed, :func:`identify` falls back to the rules alone.
"""
from __future__ import annotations

import re
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterable

from xqa.errors import XqaError
from xqa.langid import rules
from xqa.langid.codes import UNKNOWN, pipeline_language
from xqa.langid.rules import detect_language, dominant_script, latin_scores, script_of

# lingua's share of confidence another language needs to overrule the rules' cue. Chosen on the
# train splits (xqa report langid --grid): the lowest threshold within 0.1 point of the best
# mean accuracy there (a veto guards against languages those splits lack; they show only its cost).
VETO = 0.5

# Swahili question words (TyDi's Swahili questions): who, what, when, where, which, how many, how, why.
# Not "je" (the yes/no particle), which is also a common word of Croatian, Czech, Slovene, French.
SWAHILI_QUESTION_WORDS = frozenset({
    "nani", "nini", "lini", "wapi", "gani", "ngapi", "wangapi", "mingapi", "vipi", "mbona", "kwanini",
    "ipi", "upi", "lipi", "kipi", "zipi", "yupi", "wepi"})

# Scripts written by several languages: lingua decides among them.
SHARED_SCRIPTS = frozenset({"latin", "cyrillic", "arabic", "han", "devanagari"})
_SIBLINGS = frozenset({"ms", "id"})  # one language, two standards: same question words
_TOKEN = re.compile(r"[^\W\d_]+")

Scorer = Callable[[str], "list[tuple[str, float]] | None"]

_detector = None
_detector_lock = threading.Lock()
_missing_warned = False


def _lingua(preload: bool = False):
    """The lingua detector over all its languages, built once (None when lingua is not installed).

    Its models load on first use, each language's when a text could be in it; ``preload``
    loads all of them at once instead."""
    global _detector, _missing_warned
    with _detector_lock:
        if _detector is None:
            try:
                from lingua import LanguageDetectorBuilder
            except ImportError:
                if not _missing_warned:
                    warnings.warn("lingua-language-detector is not installed: language identification uses "
                                  "the script and word rules alone (pip install lingua-language-detector)",
                                  stacklevel=3)
                    _missing_warned = True
                return None
            builder = LanguageDetectorBuilder.from_all_languages()
            _detector = (builder.with_preloaded_language_models() if preload else builder).build()
        return _detector


def model_scores(text: str) -> list[tuple[str, float]] | None:
    """lingua's ``[(ISO 639-1 code, confidence), ...]``, best first (confidences sum to 1;
    ``[]`` for text no lingua language writes), or None when lingua is not installed."""
    detector = _lingua()
    if detector is None:
        return None
    return [(c.language.iso_code_639_1.name.lower(), c.value)
            for c in detector.compute_language_confidence_values(text)]


def warm_up() -> None:
    """Load every language's models now, unless a question already had lingua load some
    (seconds, ~1 GB; the demo does this while it starts)."""
    _lingua(preload=True)


def identify_elsewhere(text: str, say: Callable[[str], object] | None = None) -> Callable[[], str]:
    """Start :func:`identify` of ``text`` in a child process; the function returned waits for
    the code it gives.

    lingua takes seconds to load its models at the first question (every Latin-script
    language's for a Latin one) and holds the interpreter's lock meanwhile, so a thread
    would not help. A one-shot command (``xqa ask``) loads its indexes and reader here while
    the child loads lingua on another core. Where that cannot help (one core, lingua already
    loaded here, a script that decides alone) or the child fails, the function identifies
    here instead. ``say``: told when the function has to wait for the child.
    """
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    def here() -> str:
        return identify(text)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if _detector is not None or cores < 2 or dominant_script(text) not in SHARED_SCRIPTS:
        return here   # (a script of one language decides without lingua: microseconds here)
    import xqa

    root = str(Path(xqa.__file__).resolve().parents[1])   # this very xqa, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, text], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except (OSError, ValueError):   # no process to start, or an argument the OS refuses
        return here

    def result() -> str:
        if proc.poll() is None and say is not None:
            say("identifying the question's language ...")
        try:
            out, _ = proc.communicate(timeout=300)
            reply = json.loads(out.decode("utf-8").strip().splitlines()[-1])
            code = reply["code"]
        except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError, TypeError):
            proc.kill()
            proc.wait()
            return here()
        if proc.returncode != 0 or not isinstance(code, str):
            return here()
        for message in reply.get("warnings", []):
            warnings.warn(message, stacklevel=2)
        return code

    return result


_CHILD = "import sys; from xqa.langid.model import _child; _child(sys.argv[1])"


def _child(text: str) -> None:
    """:func:`identify_elsewhere`'s child (``python -c _CHILD TEXT``): one JSON line
    ``{"code", "warnings"}`` on stdout."""
    import json

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = identify(text)
    print(json.dumps({"code": code, "warnings": [str(w.message) for w in caught]}), flush=True)


def script_letters(text: str, script: str) -> str:
    """``text`` with the letters of other scripts blanked (an English title inside a Russian question)."""
    return "".join(ch if not ch.isalpha() or script_of(ch) == script else " " for ch in text)


def cue_language(text: str) -> str | None:
    """The Latin-script language one of whose question words (or question clitics) ``text`` holds,
    the best by the rules' score when several do; None without such a word."""
    lowered = unicodedata.normalize("NFC", text).lower()
    tokens = _TOKEN.findall(lowered)
    if not tokens:
        return None
    edges = {tokens[0], tokens[-1]}
    scores = latin_scores(lowered)
    cues = {lang: scores[lang] for lang, words in rules._QUESTION_SETS.items() if any(t in words for t in tokens)}
    if any(len(t) > 4 and t.endswith(("ko", "kö")) for t in edges):
        cues.setdefault("fi", scores["fi"])  # "lauloiko", "ovatko"
    if any(len(t) > 5 and t.endswith("kah") for t in edges):
        cues.setdefault("ms", scores["ms"])  # "pernahkah"
    sw = sum(3.0 for t in tokens if t in SWAHILI_QUESTION_WORDS)
    if sw:
        cues["sw"] = sw
    if not cues:
        return None
    order = rules._PRIORITY + ["sw"]
    return max(cues, key=lambda lang: (cues[lang], -order.index(lang)))


def identify(text: str, veto: float = VETO, scorer: Scorer = model_scores) -> str:
    """``text``'s language as an ISO 639-1 code, or :data:`UNKNOWN` (see the module doc).

    ``scorer``: lingua's scores by default; the report passes a cached one.
    """
    if not isinstance(text, str):
        raise XqaError(f"identify: the text of a question, not {type(text).__name__} {text!r:.40}")
    script = dominant_script(text)
    if script is None:
        return UNKNOWN
    if script not in SHARED_SCRIPTS:
        return detect_language(text)  # kana, Hangul, Bengali, Thai, Khmer...: the script decides
    letters = script_letters(text, script)
    scores = scorer(letters)
    if scores is None:
        return detect_language(text)  # no lingua: the rules alone
    cue = cue_language(letters) if script == "latin" else detect_language(letters)
    top, p = scores[0] if scores else (None, 0.0)
    if cue is not None and (top is None or top == cue or p < veto):
        return top if cue in _SIBLINGS and top in _SIBLINGS else cue
    return top or UNKNOWN


def identify_language(text: str, languages: Iterable[str] = (), veto: float = VETO) -> str:
    """The language of a question as a pipeline with ``languages`` should search it:
    one of ``languages`` or :data:`UNKNOWN` (BM25: every index of its script)."""
    if isinstance(languages, str):   # list("en") would be ["e", "n"]
        raise XqaError(f"identify_language: languages is a list of codes (e.g. [{languages!r}]), not a string")
    return pipeline_language(identify(text, veto), languages)


__all__ = ["SWAHILI_QUESTION_WORDS", "VETO", "cue_language", "identify", "identify_elsewhere", "identify_language",
           "model_scores", "script_letters", "warm_up"]
