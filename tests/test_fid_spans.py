"""Span-constrained candidates: the span index, constrained search, span beams merged with the
free ones, and the answer text a span becomes."""
from __future__ import annotations

import math

import pytest
import torch
from fid_facts import MICRO, record

from reader.fid.data import encode_passages, example_from_record
from reader.fid.inference import FiDReader


def test_span_index_allows_exactly_the_continuations_of_passage_spans():
    from reader.fid.spans import SEP, SpanIndex

    # two passages: [5 6 7] (title) | [8 5 9] (text); piece 6 has a ▁-marked twin 60; 3 is the bare ▁
    idx = SpanIndex([5, 6, 7, SEP, 8, 5, 9, SEP], eos=1, twin={6: 60}, bare=3)
    assert idx.allowed(()) == [3, 5, 6, 7, 8, 9, 60]
    assert idx.allowed((5,)) == [1, 6, 9]
    assert idx.allowed((5, 6)) == [1, 7]
    assert idx.allowed((7,)) == [1]              # spans never cross into the next part
    assert idx.allowed((60,)) == idx.allowed((6,)) == [1, 7]   # a span may start with the twin
    assert idx.allowed((3,)) == [6] and idx.allowed((3, 6)) == [1, 7]
    assert idx.allowed((42,)) == [1]              # off-span prefixes (beam fill-ins) can only end
    assert idx.allowed((5, 9, 1)) == [1]
    assert SpanIndex([], eos=1, twin={}, bare=None).allowed(()) == [1]


def test_span_index_pointed_starts_only_where_the_pointer_looks():
    from reader.fid.spans import SEP, SpanIndex

    idx = SpanIndex([5, 6, 7, SEP, 8, 5, 9, SEP], eos=1, twin={6: 60}, bare=3)
    assert idx.point([42]) == [3, 5, 6, 7, 8, 9, 60]      # no passage token: nothing changes
    assert idx.point([8, 42]) == [8] and idx.allowed(()) == [8]
    assert idx.allowed((8,)) == [1, 5]                    # continuations are still the passages'
    idx = SpanIndex([5, 6, 7, SEP, 8, 5, 9, SEP], eos=1, twin={6: 60}, bare=3)
    assert idx.point([6]) == [3, 6, 60]                   # an unmarked piece: as is, its twin, or ▁ + it
    assert idx.allowed((3,)) == [6] and idx.allowed((60,)) == [1, 7]


def test_constrained_search_only_writes_passage_spans(tokenizer):
    from reader.fid.spans import allowed_tokens_fn, span_indexes

    reader = FiDReader.from_config(MICRO, tokenizer, seed=3, max_length=40, max_answer_len=6, n_context=2)
    examples = [example_from_record(record(i)) for i in range(4)]
    batch = encode_passages(tokenizer, examples, 2, 40)
    fn = allowed_tokens_fn(span_indexes(tokenizer, examples, 2, 40))
    with torch.no_grad():
        enc, mask = reader.model.encode(batch["input_ids"], batch["attention_mask"], batch["passage_mask"])
        seqs = reader.model._search(enc.last_hidden_state, mask, beams=4, k=4, max_new_tokens=6,
                                    allowed_tokens_fn=fn)
    assert seqs.shape[:2] == (4, 4)
    for ex, rows in zip(examples, seqs):
        sources = [" ".join(part.split()) for part in ex["titles"] + ex["texts"]]
        for text in tokenizer.batch_decode(rows, skip_special_tokens=True):
            text = " ".join(text.split())
            assert text and any(text in s for s in sources), (text, sources)


def test_span_beams_add_exactly_scored_candidates_without_repeats(trained):
    reader = FiDReader.load(trained["out"])
    examples = trained["examples"]
    plain = reader.read_examples(examples, beams=2, n_best=2)
    both = reader.read_examples(examples, beams=2, n_best=2, span_beams=3)
    for p, b, ex in zip(plain, both, examples):
        assert 2 <= len(b.candidates) <= 5 and b.text == p.text == ex["answers"][0]
        scores = [s for _, s in b.candidates]
        assert scores == sorted(scores, reverse=True) and all(math.isfinite(s) for s in scores)
        assert len({t for t, _ in b.candidates}) == len(b.candidates)
        assert b.candidate_relevance.shape == (len(b.candidates), 2)
        # the free candidates keep their exact scores in the merged list
        merged = dict(b.candidates)
        for t, s in p.candidates:
            assert merged[t] == pytest.approx(s, abs=1e-4)


def test_answer_text_drops_the_full_stop_a_span_brings_along():
    from reader.fid.inference import answer_text

    assert answer_text(" 1958. ") == "1958"
    assert answer_text("東京。") == "東京" and answer_text("ঢাকা।") == "ঢাকা"
    assert answer_text("Банк «Киники»") == "Банк «Киники»"       # closing quotes are part of names
    assert answer_text(".") == "." and answer_text("") == ""
