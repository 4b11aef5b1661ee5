"""Identify a question's language in another process while this one loads the models.

A cold ``xqa ask`` spends about as long loading lingua's n-gram models (seconds for a
Latin-script question: every Latin-script language's) as it spends loading the indexes and the
reader, and lingua holds Python's global lock while it loads, so a thread would not overlap
them. :func:`identify_language_elsewhere` starts a child Python process that runs
:func:`xqa.langid.identify_language` on the question and returns a function that waits for its
answer; the caller loads its models meanwhile, on the other core. The child computes exactly
what this process would; if it fails, the waiting function identifies the language here.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence

_CHILD = ("import json, sys\n"
          "from xqa.langid import identify_language\n"
          "text, languages = json.loads(sys.stdin.read())\n"
          "print(identify_language(text, languages))\n")


def identify_language_elsewhere(text: str, languages: Sequence[str] = ()) -> Callable[[], str]:
    """Start identifying ``text``'s language (as :func:`xqa.langid.identify_language`) in a
    child process; the returned function waits for the code."""
    from xqa.langid import identify_language

    try:
        child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    except OSError:
        return lambda: identify_language(text, languages)
    payload = json.dumps([text, list(languages)], ensure_ascii=False)

    def wait() -> str:
        try:
            out, _ = child.communicate(payload, timeout=600)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            out = ""
        code = (out or "").strip()
        return code if child.returncode == 0 and code else identify_language(text, languages)

    return wait
