"""Answer text as a user expects it: no stray punctuation at its edges, no unbalanced brackets.

A span reader cuts answers out of running text at token boundaries, so a span can end in
the comma, full stop or danda that follows it in the passage (``ليبرالية،``, ``東京。``), or
keep one half of a bracket pair (``1918 (aged``). Gold answers of the QA sets never have
these. :func:`tidy_answer` removes them and leaves everything else as written:

- leading and trailing white space and punctuation (Unicode category P*), in any script;
- except what belongs to the answer: a closing bracket or quote whose opening one is in the
  answer (``Paris (France)``, ``«Don Quijote»``), an opening one whose closing one is, a
  trailing ``%`` or ``‰``, the full stop of an initialism or a short abbreviation (``D.C.``,
  ``Jr.``), and a minus or hyphen right before a digit (``-5``);
- an opening bracket with no closing one, and what follows it (``1918 (aged`` → ``1918``),
  unless it starts the answer; a closing bracket with no opening one, and what follows it
  (``57 SM-654 M), tengah`` → ``57 SM-654 M``), or what comes before it where that holds no
  letter or digit;
- a straight double quote that has no partner, likewise;
- a span across a blank line (two paragraphs of a passage cut from a document, a table cell
  and the paragraph after it) keeps its first paragraph that has a letter or digit.

What is left is always a piece of the text as written: nothing is taken out of its middle.

Never returns an empty string for a non-empty answer made only of punctuation: such an
answer is returned stripped of white space, as it was.
"""
from __future__ import annotations

import re
import unicodedata

# Opening -> closing brackets and quotes that come in pairs.
PAIRS = {"(": ")", "[": "]", "{": "}", "（": "）", "［": "］", "｛": "｝", "「": "」", "『": "』",
         "【": "】", "〔": "〕", "〈": "〉", "《": "》", "«": "»", "‹": "›", "“": "”", "‘": "’",
         "„": "“", "‚": "‘"}
_CLOSERS = {c: o for o, c in PAIRS.items() if o not in "„‚"}
_KEEP_TRAILING = {"%", "‰", "‱"}
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r]*\n\s*")   # a blank line between two paragraphs
# "D.C.", "U.S.", "e.g." (letters each followed by a full stop) and "Jr.", "St.", "Co." keep their stop.
_ABBREVIATION = re.compile(r"(?:^|\s)(?:(?:\w\.){2,}|[A-Z][a-z]{0,2}\.)$")


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _balanced_close(text: str, i: int) -> bool:
    """Is the closing bracket/quote at ``text[i]`` matched by an opening one before it?"""
    opener = _CLOSERS.get(text[i])
    if opener is None:
        return False
    depth = 0
    for j in range(i - 1, -1, -1):
        if text[j] == text[i] and opener != text[i]:
            depth += 1
        elif text[j] == opener:
            if depth == 0:
                return True
            depth -= 1
    return False


def _balanced_open(text: str, i: int) -> bool:
    """Is the opening bracket/quote at ``text[i]`` matched by a closing one after it?"""
    closer = PAIRS.get(text[i])
    return closer is not None and closer in text[i + 1:]


def _strip_edges(text: str) -> str:
    text = text.strip()
    while text and (_is_punct(text[-1]) or text[-1].isspace()):
        ch = text[-1]
        if ch.isspace():
            text = text.rstrip()
            continue
        if ch in _KEEP_TRAILING or _balanced_close(text, len(text) - 1):
            break
        if ch == "." and _ABBREVIATION.search(text):
            break
        if ch == '"' and text.count('"') % 2 == 0:
            break
        text = text[:-1]
    while text and (_is_punct(text[0]) or text[0].isspace()):
        ch = text[0]
        if ch.isspace():
            text = text.lstrip()
            continue
        if _balanced_open(text, 0):
            break
        if ch in "-‐‑‒–−" and len(text) > 1 and text[1].isdigit():
            break
        if ch == '"' and text.count('"') % 2 == 0:
            break
        text = text[1:]
    return text


def _cut_at(text: str, at: int) -> str:
    """``text`` without the character at ``at`` and one side of it: what comes before where that
    holds a letter or digit, else what follows. The answer stays a piece of the passage as it
    is written (a character taken out of its middle would make it one the passage never has)."""
    head = text[:at]
    return head if any(ch.isalnum() for ch in head) else text[at + 1:]


def _drop_unbalanced(text: str) -> str:
    """Cut an unmatched opening bracket and its tail, an unmatched closing bracket and its head
    or tail (:func:`_cut_at`), and a lone straight quote likewise."""
    while True:
        stack: list[int] = []
        closer = None
        for i, ch in enumerate(text):
            if ch in PAIRS and PAIRS[ch] != ch and ch not in "“‘„‚":
                stack.append(i)
            elif ch in _CLOSERS and ch not in "”’":
                if stack and PAIRS[text[stack[-1]]] == ch:
                    stack.pop()
                elif closer is None:
                    closer = i
        if stack and stack[0] > 0 and (closer is None or stack[0] < closer):
            text = text[:stack[0]]   # an unclosed bracket and its tail (1918 (aged → 1918)
        elif stack and stack[0] == 0 and (closer is None or closer > 0):
            text = text[1:]          # the answer starts with a bracket never closed: the bracket alone
        elif closer is not None:
            text = _cut_at(text, closer)   # 57 SM-654 M), tengah → 57 SM-654 M
        else:
            break
    if text.count('"') % 2:   # a lone straight quote
        at = text.rfind('"') if text.rstrip().endswith('"') or not text.lstrip().startswith('"') else text.find('"')
        text = _cut_at(text, at)
    return text


def tidy_answer(text: str) -> str:
    """``text`` without edge punctuation and unbalanced brackets (see the module doc)."""
    if not text:
        return text
    paragraphs = _PARAGRAPH_BREAK.split(text.strip())
    if len(paragraphs) > 1:
        text = next((p for p in paragraphs if any(ch.isalnum() for ch in p)), text)
    out = _strip_edges(_drop_unbalanced(_strip_edges(text)))
    return out if out else text.strip()
