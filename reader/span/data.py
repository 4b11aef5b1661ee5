"""Inputs of the span reader: (question, passage) windows with character offsets.

A row is ``<s> question </s> title </s> text-window </s>`` (the tokenizer's own ``<s>``/
``</s>``; BERT's [CLS]/[SEP]). A passage longer than the row budget becomes several
windows over its text tokens that overlap by ``stride`` tokens. Every text token keeps its
character offsets in the passage text, so a span of tokens is a span of the passage's own
characters: answers are shown as written there. Spans live only on text tokens (never the
question, the title or special tokens) and never cross windows or passages.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from xqa.errors import XqaError


@dataclass
class Encoded:
    """A tokenized text: ids and the character span ``(start, end)`` of each token."""

    ids: list[int]
    offsets: list[tuple[int, int]]


@dataclass
class Window:
    """One model row: ``ids`` with the text tokens at ``[text_start, text_start + n)`` of the row,
    which are tokens ``[first, first + n)`` of the passage text."""

    ids: list[int]
    text_start: int
    first: int
    n: int
    passage: int = 0                         # index of the passage among the question's
    offsets: list[tuple[int, int]] = field(default_factory=list)  # of the n text tokens


@dataclass(frozen=True)
class RowLayout:
    max_length: int = 256
    max_question: int = 48
    max_title: int = 24
    stride: int = 64     # tokens two windows of one passage share


def encode(tokenizer, texts: list[str]) -> list[Encoded]:
    enc = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    return [Encoded(list(i), [tuple(o) for o in off]) for i, off in zip(enc["input_ids"], enc["offset_mapping"])]


def windows(question: Encoded, title: Encoded, text: Encoded, cls_id: int, sep_id: int,
            layout: RowLayout, passage: int = 0) -> list[Window]:
    """The rows of one (question, passage) pair, covering every text token at least once."""
    head = row_head(question.ids, title.ids, cls_id, sep_id, layout)
    return [Window(head + text.ids[first: first + n] + [sep_id], len(head), first, n, passage,
                   text.offsets[first: first + n])
            for first, n in window_positions(len(head), len(text.ids), layout)]


def row_head(question: list[int], title: list[int], cls_id: int, sep_id: int, layout: RowLayout) -> list[int]:
    """``<s> question </s> title </s>`` (no title part for a passage without one)."""
    head = [cls_id] + list(question[: layout.max_question]) + [sep_id]
    if len(title):
        head += list(title[: layout.max_title]) + [sep_id]
    return head


def window_positions(head: int, n_text: int, layout: RowLayout) -> list[tuple[int, int]]:
    """``(first, n)`` of each window over ``n_text`` text tokens behind a head of ``head`` tokens:
    as many text tokens as the row holds, consecutive windows sharing ``layout.stride``."""
    budget = max(8, layout.max_length - head - 1)
    step = max(1, budget - layout.stride)
    out = []
    first = 0
    while True:
        n = min(budget, n_text - first)
        out.append((first, n))
        if first + n >= n_text:
            return out
        first += step


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Token indexes ``(s, e)`` (inclusive) of the tokens overlapping characters ``[start, end)``,
    or None. A bare metaspace token ``▁`` before a CJK word shares the word's start; the word
    is the span's start."""
    idx = [i for i, (a, b) in enumerate(offsets) if b > a and b > start and a < end]
    if not idx:
        return None
    s, e = idx[0], idx[-1]
    if s < e and offsets[s + 1][0] == offsets[s][0]:
        s += 1
    return s, e


def span_text(text: str, offsets: list[tuple[int, int]], s: int, e: int) -> tuple[str, int, int]:
    """``(answer, char start, char end)`` of tokens ``s..e`` in ``text``, edge spaces removed."""
    a, b = offsets[s][0], offsets[e][1]
    raw = text[a:b]
    lead = len(raw) - len(raw.lstrip())
    trail = len(raw) - len(raw.rstrip())
    return raw.strip(), a + lead, b - trail


def answer_token_spans(text: str, encoded: Encoded, answers: list[str],
                       starts: list[int] | None = None) -> list[tuple[int, int]]:
    """Every occurrence of every answer in ``text`` as token spans (GAR marginalises over all)."""
    found: set[tuple[int, int]] = set()
    for k, ans in enumerate(answers):
        ans = ans.strip()
        if not ans:
            continue
        positions = set()
        if starts and k < len(starts) and starts[k] >= 0 and text[starts[k]: starts[k] + len(ans)] == ans:
            positions.add(starts[k])
        at = text.find(ans)
        while at >= 0:
            positions.add(at)
            at = text.find(ans, at + 1)
        for at in positions:
            span = token_span(encoded.offsets, at, at + len(ans))
            if span is not None:
                found.add(span)
    return sorted(found)


def pad_rows(rows: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """``input_ids``/``attention_mask`` ``[n, max row length]``."""
    width = max((len(r) for r in rows), default=1)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def check_layout(max_length: int, stride: int) -> None:
    """Two windows of one passage share ``stride`` tokens: at half a window or more, each token is
    read more than twice, and a window whose question and title leave room for fewer text tokens
    than ``stride`` advances one token at a time (hundreds of rows per passage)."""
    if stride >= max_length // 2:
        raise XqaError(f"--stride {stride}: two windows of {max_length} tokens (--max-length) would share half "
                       f"of them or more; give less than {max_length // 2}")
