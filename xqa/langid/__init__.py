"""Offline language identification of short questions.

* :mod:`xqa.langid.rules`: script rules and Latin-script word lists
  (:func:`~xqa.langid.rules.detect_language`, microseconds, never "unknown");
* :mod:`xqa.langid.model`: the rules' cues checked by a statistical identifier
  (lingua), which may answer :data:`UNKNOWN`; :func:`identify_language` is what
  :meth:`xqa.pipeline.Pipeline.ask` uses;
* :mod:`xqa.langid.codes`: language names, and a code mapped onto a pipeline's languages.

docs/langid.md measures both identifiers (``xqa report langid``). Importing
this package does not import lingua.
"""
from xqa.langid.codes import LANGUAGE_NAMES, UNKNOWN, language_name, pipeline_language, resolve_language, \
    searched_language
from xqa.langid.model import identify, identify_language, warm_up
from xqa.langid.rules import detect_language, script_of

__all__ = ["LANGUAGE_NAMES", "UNKNOWN", "detect_language", "identify", "identify_language", "language_name",
           "pipeline_language", "resolve_language", "script_of", "searched_language", "warm_up"]
