"""Copy-constrained decoding: candidates that are spans of the passages the reader read.

A small reader trained from scratch on a CPU budget learns the *type* of an
answer (a city, a year, a company) long before it copies the right string
reliably: its free beam search often writes a plausible name that occurs in no
passage. Evidence fusion can only reward what occurs in a passage, so the reader
also runs a second beam search whose every step is restricted to continuations
of a span of the passages (title or text; spans never cross passages), the
decoder's own probabilities deciding which span. The two n-best lists are merged
and every candidate is re-scored exactly, unconstrained, so the scores stay the
model's log-probabilities and the free candidates (translations, which are
spans of no passage) compete on equal terms.

Token level, with one subtlety: SentencePiece tokenizes a word the same wherever
it stands (pieces never cross whitespace), so a span of space-separated words
has the same ids in the passage as on its own. In scripts without spaces (zh,
ja) a span may start inside a passage's "word", where its first piece lacks the
word-start marker ``▁`` that a stand-alone answer starts with; the first step
therefore also allows the ``▁``-marked twin of every unmarked passage piece
(and the bare ``▁`` piece followed by an unmarked piece).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

SEP = -1  # between the title and the text, and between passages: spans never cross it

WORD_START = "\u2581"  # SentencePiece's ▁


class SpanIndex:
    """The spans one example's passages allow; ``allowed(prefix)`` -> next token ids.

    ``ids``: the passages' token ids (title and text of each passage), joined with
    :data:`SEP`. ``twin``: unmarked piece id -> id of its ``▁``-marked twin;
    ``bare``: id of the piece ``▁`` alone (or None).
    """

    def __init__(self, ids: np.ndarray, eos: int, twin: Mapping[int, int], bare: int | None):
        self.ids = np.asarray(ids, dtype=np.int64)
        self.eos = int(eos)
        self.untwin = {m: u for u, m in twin.items()}  # marked twin -> unmarked piece
        self.bare = bare
        real = self.ids[self.ids != SEP]
        unmarked = [int(t) for t in np.unique(real) if int(t) in twin]
        first = set(int(t) for t in np.unique(real)) | {twin[t] for t in unmarked}
        if bare is not None and unmarked:
            first.add(bare)
        self._first = sorted(first)
        self._unmarked = sorted(unmarked)
        self._twin = dict(twin)
        self.tokens = set(int(t) for t in np.unique(real))  # every token id of the passages
        self._cache: dict[tuple[int, ...], list[int]] = {}

    def point(self, token_ids: Sequence[int]) -> list[int]:
        """Start spans only at these passage tokens: the reader's copy head points there.

        Each token may start a span as it is, as its ``▁``-marked twin, or as the bare
        ``▁`` followed by it (the first-step readings of the class docstring). Tokens
        that are in no passage are ignored; if none is left, nothing changes. Returns
        the first-step tokens now allowed.
        """
        picked = [int(t) for t in token_ids if int(t) in self.tokens]
        if not picked:
            return self._first
        first, unmarked = set(picked), sorted(t for t in picked if t in self._twin)
        first.update(self._twin[t] for t in unmarked)
        if self.bare is not None and unmarked:
            first.add(self.bare)
        self._first, self._unmarked = sorted(first), unmarked or self._unmarked
        self._cache.pop((), None)
        if self.bare is not None:
            self._cache.pop((self.bare,), None)
        return self._first

    def _ends(self, seq: Sequence[int]) -> np.ndarray:
        """Positions just after each occurrence of ``seq`` in the passages."""
        ids, k = self.ids, len(seq)
        if k == 0 or k > len(ids):
            return np.zeros(0, dtype=np.int64)
        starts = np.nonzero(ids[: len(ids) - k + 1] == seq[0])[0]
        for j in range(1, k):
            if starts.size == 0:
                break
            starts = starts[ids[starts + j] == seq[j]]
        return starts + k

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Token ids that may follow ``prefix`` (the answer tokens so far, no start token)."""
        key = tuple(int(t) for t in prefix)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if not key:
            out = self._first or [self.eos]  # no passage text: only the empty answer
        elif key[-1] == self.eos:
            out = [self.eos]  # finished beams only ever continue with </s> (padding)
        elif self.bare is not None and key == (self.bare,):
            out = self._unmarked or [self.eos]
        else:
            readings = [key]
            if self.bare is not None and key[0] == self.bare:
                readings = [key[1:]]
            elif key[0] in self.untwin:
                readings.append((self.untwin[key[0]],) + key[1:])
            nxt: set[int] = set()
            for seq in readings:
                ends = self._ends(seq)
                ends = ends[ends < len(self.ids)]
                nxt.update(int(t) for t in np.unique(self.ids[ends]) if t != SEP)
            nxt.add(self.eos)
            out = sorted(nxt)
        self._cache[key] = out
        return out


def piece_twins(tokenizer) -> tuple[dict[int, int], int | None]:
    """(unmarked piece id -> id of ``▁`` + piece, id of the bare ``▁`` piece) for a SentencePiece vocab."""
    vocab: dict[str, int] = tokenizer.get_vocab()
    twin = {}
    for piece, i in vocab.items():
        if piece and not piece.startswith(WORD_START):
            j = vocab.get(WORD_START + piece)
            if j is not None:
                twin[i] = j
    return twin, vocab.get(WORD_START)


def span_indexes(tokenizer, examples: Sequence[Mapping[str, Any]], n_context: int,
                 max_length: int, twins: tuple[dict[int, int], int | None] | None = None) -> list[SpanIndex]:
    """One :class:`SpanIndex` per example over the titles and texts of its first
    ``n_context`` passages, each text cut where the encoder row is cut (``max_length``)."""
    from reader.fid.data import format_passage

    twin, bare = twins if twins is not None else piece_twins(tokenizer)
    eos = tokenizer.eos_token_id
    out = []
    for ex in examples:
        parts: list[int] = []
        for title, text in list(zip(ex["titles"], ex["texts"]))[:n_context]:
            room = max_length - 1 - len(tokenizer(format_passage(ex["question"], ex.get("lang", ""), title, ""),
                                                  add_special_tokens=False)["input_ids"])
            t_ids = tokenizer(title, add_special_tokens=False)["input_ids"] if title else []
            x_ids = tokenizer(text, add_special_tokens=False)["input_ids"][: max(0, room)] if text else []
            parts += t_ids + [SEP] + x_ids + [SEP]
        out.append(SpanIndex(np.asarray(parts, dtype=np.int64), eos, twin, bare))
    return out


def allowed_tokens_fn(indexes: Sequence[SpanIndex], start_len: int = 1):
    """A ``prefix_allowed_tokens_fn`` for Hugging Face ``generate`` (the decoder's
    sequences start with ``start_len`` start tokens)."""

    def fn(batch_id: int, input_ids) -> list[int]:
        return indexes[batch_id].allowed(input_ids[start_len:].tolist())

    return fn


def passage_ranges(tokenizer, examples: Sequence[Mapping[str, Any]], n_context: int, max_length: int,
                   row_length: int) -> list[list[tuple[int, int]]]:
    """Per example, the ``[start, end)`` encoder positions (flattened over its ``n_context`` rows
    of ``row_length`` tokens, as :func:`reader.fid.data.encode_passages` lays them out) that hold a
    passage's title or its text: where a copied answer may lie (not the question, the markers,
    ``</s>`` or padding). SentencePiece never cuts across white space, so each segment's
    positions are the lengths of the formatted row's prefixes."""
    from reader.fid.data import format_passage

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    cap = min(max_length - 1, row_length)   # a cut row ends in </s> at max_length - 1
    out = []
    for ex in examples:
        q, lang = ex["question"], ex.get("lang", "")
        ranges = []
        for n, (title, text) in enumerate(list(zip(ex["titles"], ex["texts"]))[:n_context]):
            head = format_passage(q, lang, title, "")                   # "... title: T context: "
            marks = (count(head[: head.rindex(" title: ") + len(" title:")]), count(head[: head.rindex(" context: ")]),
                     count(head.rstrip()), count(format_passage(q, lang, title, text)))
            for s, e in ((marks[0], marks[1]), (marks[2], marks[3])):
                s, e = min(s, cap), min(e, cap)
                if e > s:
                    ranges.append((n * row_length + s, n * row_length + e))
        out.append(ranges)
    return out


def pointer_span_sequences(input_ids, ranges: Sequence[Sequence[tuple[int, int]]], looks, n_starts: int,
                           max_tokens: int, start_id: int, eos: int, pad: int):
    """Candidates read off the passages where the pointer looks: for each question, its
    ``n_starts`` positions (within ``ranges``, :func:`passage_ranges`) with the most pointer
    attention ``looks`` [B, N*L], and from each the spans of 1 … ``max_tokens`` tokens that stay
    within its title or text, each once. Returns sequences [B, k, T] (``start_id`` first, ``</s>``
    last, ``pad`` after; a question with fewer spans repeats its last one, which scoring drops)."""
    import torch

    flat = input_ids.reshape(input_ids.shape[0], -1).tolist()           # [B, N, L] -> [B, N*L]
    rows: list[list[list[int]]] = []
    for b, spans in enumerate(ranges):
        inside = {p: e for s, e in spans for p in range(s, e)}             # position -> end of its segment
        seqs: dict[tuple[int, ...], None] = {}   # a name the passages repeat is read once
        if inside:
            order = looks[b].argsort(descending=True).tolist()
            starts = [p for p in order if p in inside][:n_starts]
            for p in starts:
                for length in range(1, max_tokens + 1):
                    if p + length > inside[p]:
                        break
                    seqs[(start_id, *flat[b][p:p + length], eos)] = None
        rows.append([list(s) for s in seqs] or [[start_id, eos]])
    k = max(len(r) for r in rows)
    T = max(len(s) for r in rows for s in r)
    out = torch.full((len(rows), k, T), pad, dtype=torch.long)
    for b, r in enumerate(rows):
        r = r + [r[-1]] * (k - len(r))
        for j, seq in enumerate(r):
            out[b, j, :len(seq)] = torch.tensor(seq)
    return out
