"""Guided cross-attention and the pointer: a copy head trained to look at the answer, pointer
scores and spans, the pointer-generator mixture, decoder prompts that learn to point."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from fid_facts import FACTS, MICRO, PASSAGE, QUESTION, record

from reader.fid.data import FiDCollator, encode_passages, example_from_record
from reader.fid.inference import FiDReader
from reader.fid.task import FiDTask, copy_attention_loss
from xqa.errors import XqaError


@pytest.fixture(scope="module")
def guided(tokenizer, tmp_path_factory):
    """Two micro readers trained alike on the six facts, one with guided cross-attention."""
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    examples = [example_from_record(record(i)) for i in range(len(FACTS))]
    readers = {}
    for name, weight in (("guided", 1.0), ("plain", 0.0)):
        reader = FiDReader.from_config(MICRO, tokenizer, seed=0, max_length=96, max_answer_len=8, n_context=2)
        collator = FiDCollator(tokenizer, n_context=2, max_length=96, max_answer_len=8, copy_targets=True)
        train(FiDTask(reader, collator, copy_attention=weight), examples,
              TrainConfig(out_dir=str(tmp_path_factory.mktemp(name)), batch_size=6, max_steps=60, lr=3e-3,
                          weight_decay=0.0, log_every=10, save_every=1000), progress=False)
        batch = collator(examples)
        with torch.no_grad():
            out = reader.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               passage_mask=batch["passage_mask"], labels=batch["labels"], output_attentions=True)
        layer, head = reader.model.copy_head or (1, 0)
        mass = math.exp(-copy_attention_loss(out.cross_attentions[layer], batch["copy_mask"], head).item())
        readers[name] = {"reader": reader, "mass": mass, "batch": batch}
    return {"examples": examples, **readers}


def test_guided_attention_trains_a_head_to_look_at_the_answer(guided):
    assert guided["guided"]["reader"].model.copy_head == (1, 0)      # last decoder layer, head 0
    assert guided["plain"]["reader"].model.copy_head is None
    assert guided["guided"]["mass"] > 0.8 and guided["guided"]["mass"] > guided["plain"]["mass"] + 0.2, \
        (guided["guided"]["mass"], guided["plain"]["mass"])


def test_pointer_score_adds_the_copy_heads_log_mass(guided):
    from reader.fid.model import POINTER_FLOOR

    fid, batch = guided["guided"]["reader"].model, guided["guided"]["batch"]
    enc, mask = fid.encode(batch["input_ids"], batch["attention_mask"], batch["passage_mask"])
    labels = batch["labels"].clamp(min=0)                                    # -100 padding -> <pad>
    seqs = torch.cat([torch.zeros_like(labels[:, :1]), labels], dim=1)       # decoder start first
    with torch.no_grad():
        plain, _ = fid.score(enc.last_hidden_state, mask, seqs, 2)
        pointed, _ = fid.score(enc.last_hidden_state, mask, seqs, 2, batch["copy_mask"])
        out = fid.t5(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=seqs[:, :-1], output_attentions=True)
    att = out.cross_attentions[1][:, 0]
    assert all(batch["copy_mask"][b].sum() > 0 for b in range(len(labels)))   # every answer is in a passage
    for b in range(len(labels)):
        steps = [t for t, i in enumerate(labels[b].tolist()) if i not in (0, 1)]
        mass = [float((att[b, t] * batch["copy_mask"][b, t]).sum()) for t in steps]
        expected = sum(math.log(m + POINTER_FLOOR) for m in mass)
        assert float(pointed[b] - plain[b]) == pytest.approx(expected, rel=1e-4, abs=1e-4)
        assert expected > len(steps) * math.log(0.5)                  # the head found the answer


def test_generator_share_scores_each_token_as_a_mixture_of_generator_and_pointer(guided):
    """Pointer-generator scoring (--generator-share λ): a token's probability is λ·p_gen + (1-λ)·mass,
    </s> λ·p_gen(</s>); a candidate in no passage pays log λ per token (</s> included) on top of
    the generator's."""
    from reader.fid.model import check_generator_share

    fid, batch = guided["guided"]["reader"].model, guided["guided"]["batch"]
    enc, mask = fid.encode(batch["input_ids"], batch["attention_mask"], batch["passage_mask"])
    labels = batch["labels"].clamp(min=0)
    seqs = torch.cat([torch.zeros_like(labels[:, :1]), labels], dim=1)
    with torch.no_grad():
        out = fid.t5(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=seqs[:, :-1], output_attentions=True)
        fid.generator_share = 0.25
        try:
            mixed, rel = fid.score(enc.last_hidden_state, mask, seqs, 2, batch["copy_mask"])
            nowhere, _ = fid.score(enc.last_hidden_state, mask, seqs, 2, torch.zeros_like(batch["copy_mask"]))
        finally:
            fid.generator_share = None
        plain, _ = fid.score(enc.last_hidden_state, mask, seqs, 2)
    p_gen = out.logits.softmax(-1)
    att = out.cross_attentions[1][:, 0]
    for b in range(len(labels)):
        expected = 0.0
        for t, i in enumerate(seqs[b, 1:].tolist()):
            if i == 0:                                                    # padding after </s>
                break
            mass = float((att[b, t] * batch["copy_mask"][b, t]).sum()) if i != 1 else 0.0
            expected += math.log(0.25 * float(p_gen[b, t, i]) + 0.75 * mass)
            if i == 1:
                break
        assert float(mixed[b]) == pytest.approx(expected, rel=1e-4, abs=1e-4)
        n_answer = sum(1 for i in labels[b].tolist() if i not in (0, 1))
        assert float(nowhere[b] - plain[b]) == pytest.approx((n_answer + 1) * math.log(0.25), abs=1e-4)  # </s> too
        assert float(mixed[b]) > float(nowhere[b]) + n_answer * 0.5   # found by the pointer: far cheaper
    assert torch.allclose(rel.sum(1), torch.ones(len(labels)))
    assert check_generator_share(0) is None and check_generator_share(None) is None and check_generator_share(1) == 1.0
    with pytest.raises(ValueError, match="generator_share"):
        check_generator_share(1.5)


def test_pointer_spans_are_the_passage_spans_where_the_pointer_looks(tokenizer):
    from reader.fid.data import encode_passages
    from reader.fid.spans import passage_ranges, pointer_span_sequences

    ex = {"question": QUESTION["en"].format("Norland"), "lang": "en", "titles": ["Norland", "Sudmark"],
          "texts": [PASSAGE["en"].format("Norland", "Velora"), PASSAGE["en"].format("Sudmark", "Kastell")]}
    batch = encode_passages(tokenizer, [ex], 2, 256)
    ids = batch["input_ids"]
    L = ids.shape[-1]
    (ranges,) = passage_ranges(tokenizer, [ex], 2, 256, L)
    flat = ids.reshape(-1).tolist()
    pieces = [tokenizer.decode(flat[s:e], skip_special_tokens=True).strip() for s, e in ranges]
    assert pieces == ["Norland", "The capital of Norland is Velora.", "Sudmark", "The capital of Sudmark is Kastell."]
    # the pointer looks most at the question's "Norland" (no passage: skipped), then at "Velora"
    velora = ranges[1][0] + len(tokenizer("The capital of Norland is", add_special_tokens=False)["input_ids"])
    assert tokenizer.decode(flat[velora:velora + 3], skip_special_tokens=True).strip().startswith("Vel")
    looks = torch.zeros(1, 2 * L)
    looks[0, velora], looks[0, 12] = 1.0, 2.0
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    seqs = pointer_span_sequences(ids, [ranges], looks, n_starts=1, max_tokens=50, start_id=0, eos=eos, pad=pad)
    texts = tokenizer.batch_decode(seqs[0], skip_special_tokens=True)
    assert "Velora" in texts and all(t.startswith("V") for t in texts)
    assert texts[-1] == "Velora."                    # a span never runs past its segment (the text's end)
    assert all(int(row[0]) == 0 and eos in row.tolist() for row in seqs[0])
    two = pointer_span_sequences(ids, [ranges, []], looks.repeat(2, 1), n_starts=2, max_tokens=2, start_id=0,
                                 eos=eos, pad=pad)
    assert two.shape[:2] == (2, 4) and two[1].tolist() == [[0, eos] + [pad] * (two.shape[2] - 2)] * 4


def test_a_pointer_generator_reader_reads_pointer_spans_and_saves_its_generator_share(guided, tmp_path):
    reader, examples = guided["guided"]["reader"], guided["examples"]
    reader.model.generator_share = 0.1
    try:
        outs = reader.read_examples(examples, beams=2, n_best=2, span_beams=2)
        reader.save(tmp_path / "mix")
    finally:
        reader.model.generator_share = None
    assert [o.candidates[0][0] for o in outs] == [FACTS[i][1] for i in range(len(FACTS))]
    assert all(len(o.candidates) > 4 for o in outs)                    # the pointer's spans were read too
    reader.model.generator_share = 0.1   # the pointer's spans are no longer than the answers allowed
    try:
        short = reader.read_examples(examples, beams=2, n_best=2, span_beams=2, max_answer_len=1)
    finally:
        reader.model.generator_share = None
    pieces = [len(reader.tokenizer(text, add_special_tokens=False)["input_ids"])
              for o in short for text, _ in o.candidates]
    assert pieces and max(pieces) <= 2                                 # one token (and what decoding splits off)
    config = json.loads((tmp_path / "mix" / "config.json").read_text())
    assert config["generator_share"] == 0.1
    assert FiDReader.load(tmp_path / "mix").model.generator_share == 0.1
    assert FiDReader.load(tmp_path / "mix", generator_share=0).model.generator_share is None    # overridden: off
    # a reader saved by an earlier xqa (the share under its old name) is an error that says what to do
    config["pointer_mix"] = config.pop("generator_share")
    (tmp_path / "mix" / "config.json").write_text(json.dumps(config))
    with pytest.raises(XqaError, match="earlier version of xqa.*train it again"):
        FiDReader.load(tmp_path / "mix")


def test_pointer_reader_starts_spans_where_it_points_and_survives_save_load(guided, tmp_path):
    reader, examples = guided["guided"]["reader"], guided["examples"]
    outs = reader.read_examples(examples, beams=2, n_best=2, span_beams=2)
    assert [o.candidates[0][0] for o in outs] == [FACTS[i][1] for i in range(len(FACTS))]
    collator = FiDCollator(reader.tokenizer, n_context=2, max_length=96, max_answer_len=8)
    task = FiDTask(reader, collator, dev_examples=examples, eval_span_beams=2)   # validation reads alike
    assert task.evaluate(reader.model)["em"] == 1.0
    reader.save(tmp_path / "pointer")
    assert json.loads((tmp_path / "pointer" / "config.json").read_text())["copy_head"] == [1, 0]
    loaded = FiDReader.load(tmp_path / "pointer")
    assert loaded.model.copy_head == (1, 0)
    again = loaded.read_examples(examples, beams=2, n_best=2, span_beams=2)
    for x, y in zip(outs, again):
        assert [t for t, _ in x.candidates] == [t for t, _ in y.candidates]
        np.testing.assert_allclose([v for _, v in x.candidates], [v for _, v in y.candidates], atol=1e-4)


@pytest.mark.slow
def test_prompted_reader_learns_points_and_survives_save_load(tokenizer, tmp_path):
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    examples = [example_from_record(record(i)) for i in range(len(FACTS))]
    reader = FiDReader.from_config(MICRO, tokenizer, seed=0, max_length=96, max_answer_len=8, n_context=2,
                                   decoder_prompt=True)
    collator = FiDCollator(tokenizer, n_context=2, max_length=96, max_answer_len=8, copy_targets=True, prompt=True)
    train(FiDTask(reader, collator, copy_attention=1.0), examples,
          TrainConfig(out_dir=str(tmp_path / "run"), batch_size=6, max_steps=80, lr=3e-3, weight_decay=0.0,
                      log_every=10, save_every=1000), progress=False)
    outs = reader.read_examples(examples, beams=2, n_best=2, span_beams=2)
    assert [o.text for o in outs] == [FACTS[i][1] for i in range(len(FACTS))]
    assert all("question" not in t for o in outs for t, _ in o.candidates)   # the prompt is never an answer
    reader.save(tmp_path / "prompted")
    assert json.loads((tmp_path / "prompted" / "config.json").read_text())["decoder_prompt"] is True
    loaded = FiDReader.load(tmp_path / "prompted")
    assert loaded.decoder_prompt
    again = loaded.read_examples(examples, beams=2, n_best=2, span_beams=2)
    for x, y in zip(outs, again):
        assert [t for t, _ in x.candidates] == [t for t, _ in y.candidates]
        np.testing.assert_allclose([v for _, v in x.candidates], [v for _, v in y.candidates], atol=1e-4)


def test_diagnose_reading_with_span_beams_reads_through_the_pointer(guided, tmp_path, capsys):
    from xqa.cli import main

    guided["guided"]["reader"].save(tmp_path / "reader")
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    out = tmp_path / "reading.json"
    assert main(["diagnose", "reading", "--model", str(tmp_path / "reader"), "--results", str(path),
                 "--span-beams", "2", "--out", str(out), "--threads", "1"]) == 0
    groups = json.loads(out.read_text())["groups"]
    assert groups["all"]["n"] == 6 and groups["all"]["em"] == 1.0 and groups["all"]["copied"] == 1.0
