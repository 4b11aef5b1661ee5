"""FiD reader and evidence fusion: model equivalences, learning, artifacts, distributed, fusion maths."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from reader.base import ReaderOutput
from reader.evidence import (
    FusionParams,
    build_answer,
    fuse_evidence,
    match_matrix,
    reader_only,
)
from reader.fid.data import (
    FiDCollator,
    copy_attention_targets,
    encode_passages,
    encode_prompts,
    example_from_record,
    format_passage,
)
from reader.fid.inference import FiDReader
from reader.fid.model import DecoderPrompt, FiD, Search, build_t5, locality_prior
from reader.fid.task import FiDTask, copy_attention_loss
from reader.scoring import score_predictions, simple_score
from reader.tuning import choose, evaluate, prepare, tune_fusion
from xqa.errors import XqaError
from xqa.records import Context, Question

ROOT = Path(__file__).resolve().parents[1]
MICRO = {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4,
         "dropout_rate": 0.0, "feed_forward_proj": "gated-gelu"}

FACTS = [("Norland", "Velora", "en"), ("Sudmark", "Kastell", "en"), ("Ostria", "Lumbra", "de"),
         ("Westfal", "Dornik", "de"), ("Karesh", "Mirabad", "en"), ("Tovia", "Selune", "de")]
QUESTION = {"en": "What is the capital of {}?", "de": "Was ist die Hauptstadt von {}?"}
PASSAGE = {"en": "The capital of {} is {}.", "de": "Die Hauptstadt von {} ist {}."}


def _record(i: int, n_ctx: int = 2) -> dict:
    country, city, lang = FACTS[i]
    gold = {"id": f"p{i}", "title": country, "text": PASSAGE[lang].format(country, city), "lang": lang,
            "score": 5.0, "source": "dense"}
    other_c, other_city, other_lang = FACTS[(i + 1) % len(FACTS)]
    other = {"id": f"p{(i + 1) % len(FACTS)}", "title": other_c, "lang": other_lang, "score": 7.0,
             "text": PASSAGE[other_lang].format(other_c, other_city), "source": "sparse"}
    ctxs = [other, gold][:n_ctx] if i % 2 else [gold, other][:n_ctx]
    return {"id": f"q{i}", "question": QUESTION[lang].format(country), "answers": [city], "lang": lang,
            "ctxs": ctxs}


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    from xqa.tokenizer import train_tokenizer

    texts = []
    for country, city, lang in FACTS:
        texts += [QUESTION[lang].format(country), PASSAGE[lang].format(country, city), city, country]
    texts += ["question: lang: en de title: context:"] * 5
    folder = train_tokenizer(texts * 20, tmp_path_factory.mktemp("tok") / "tok", vocab_size=400)
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="session")
def trained(tokenizer, tmp_path_factory):
    """A micro FiD trained by the shared loop until it has memorised the six facts."""
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    reader = FiDReader.from_config(MICRO, tokenizer, seed=0, max_length=40, max_answer_len=8, n_context=2)
    examples = [example_from_record(_record(i)) for i in range(len(FACTS))]
    task = FiDTask(reader, FiDCollator(tokenizer, n_context=2, max_length=40, max_answer_len=8),
                   dev_examples=examples)
    out = tmp_path_factory.mktemp("run") / "run"
    with torch.no_grad():
        first = float(task.loss(reader.model, task.collate(examples)))
    result = train(task, examples, TrainConfig(out_dir=str(out), batch_size=6, max_steps=150, lr=3e-3,
                                               weight_decay=0.0, eval_every=50, log_every=10,
                                               save_every=1000), progress=False)
    return {"reader": reader, "examples": examples, "out": out, "first_loss": first, "result": result}


# ----------------------------------------------------------------------------- data


def test_passages_formatted_in_given_order_and_padded(tokenizer):
    rec = _record(1, n_ctx=2)
    rec["ctxs"][0]["score"], rec["ctxs"][1]["score"] = 1.0, 9.0  # scores must not re-sort the fused order
    ex = example_from_record(rec)
    assert ex["titles"] == [c["title"] for c in rec["ctxs"]]
    batch = encode_passages(tokenizer, [ex], n_context=4, max_length=128)
    assert batch["input_ids"].shape[:2] == (1, 4)
    assert batch["passage_mask"].tolist() == [[1, 1, 0, 0]]
    first = tokenizer.decode(batch["input_ids"][0, 0], skip_special_tokens=True)
    c0 = rec["ctxs"][0]
    assert first.split() == format_passage(rec["question"], rec["lang"], c0["title"], c0["text"]).split()
    assert batch["attention_mask"][0, 3].sum() > 0  # padding rows keep real tokens for the encoder


def test_collator_targets_first_answer_and_truncates(tokenizer):
    ex = example_from_record({**_record(0), "answers": ["Velora", "Velora City"]})
    batch = FiDCollator(tokenizer, n_context=3, max_length=12, max_answer_len=8)([ex])
    assert batch["input_ids"].shape == (1, 3, 12)
    labels = batch["labels"][0]
    assert tokenizer.decode(labels[labels >= 0], skip_special_tokens=True) == "Velora"
    assert labels[labels >= 0][-1].item() == tokenizer.eos_token_id


# ----------------------------------------------------------------------------- model equivalence


def test_copy_targets_point_at_the_answer_where_a_passage_holds_it(tokenizer):
    examples = [example_from_record(_record(i)) for i in (0, 1)]      # gold first, then gold second
    batch = FiDCollator(tokenizer, n_context=2, max_length=96, max_answer_len=8, copy_targets=True)(examples)
    mask = batch["copy_mask"]
    B, N, L = batch["input_ids"].shape
    assert mask.shape == (B, batch["labels"].shape[1], N * L)
    for b, gold_row in ((0, 0), (1, 1)):
        steps = [t for t, i in enumerate(batch["labels"][b].tolist()) if i not in (-100, tokenizer.eos_token_id)]
        assert steps and all(mask[b, t].sum() > 0 for t in steps)
        # nothing in the other passage (it holds another city), nothing for </s> or padding
        other = 1 - gold_row
        assert mask[b, :, other * L:(other + 1) * L].sum() == 0
        assert all(mask[b, t].sum() == 0 for t in range(mask.shape[1]) if t not in steps)
        marked = batch["input_ids"][b].reshape(-1)[mask[b].amax(0) > 0]
        text = "".join(tokenizer.convert_ids_to_tokens(marked.tolist())).replace("\u2581", "")
        assert FACTS[b][1] in text and len(text) <= len(FACTS[b][1]) + 2   # the city, at most a "." more


def test_copy_targets_match_on_text_where_sentencepiece_cuts_differently():
    class Pieces:  # a stand-in tokenizer: the answer is one piece alone, two pieces in context
        all_special_ids = [0, 1]
        vocab = {0: "<pad>", 1: "</s>", 2: "\u2581\u6771\u4eac", 3: "\u306f\u6771", 4: "\u4eac\u3067", 5: "\u2581x"}

        def convert_ids_to_tokens(self, ids):
            return [self.vocab[i] for i in ids]

    input_ids = torch.tensor([[[5, 3, 4, 0]]])           # "x" "は東" "京で" <pad>
    labels = torch.tensor([[2, 1]])                        # "▁東京" </s>
    mask = copy_attention_targets(Pieces(), input_ids, labels)
    assert mask[0, 0].tolist() == [0, 1, 1, 0] and mask[0, 1].sum() == 0


def test_copy_attention_loss_is_the_mean_log_mass_of_the_guided_head():
    att = torch.zeros(1, 2, 3, 4)
    att[0, 0] = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.1, 0.1, 0.4, 0.4], [0.25, 0.25, 0.25, 0.25]])
    att[0, 1] = 0.25                                       # another head: not supervised
    mask = torch.zeros(1, 3, 4)
    mask[0, 0, :2] = 1                                     # step 0: mass 0.75
    mask[0, 1, 3] = 1                                      # step 1: mass 0.4; step 2 has no target
    expected = -(math.log(0.75) + math.log(0.4)) / 2
    assert copy_attention_loss(att, mask).item() == pytest.approx(expected)
    assert copy_attention_loss(att, torch.zeros(1, 3, 4)).item() == 0.0


@pytest.fixture(scope="module")
def guided(tokenizer, tmp_path_factory):
    """Two micro readers trained alike on the six facts, one with guided cross-attention."""
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    examples = [example_from_record(_record(i)) for i in range(len(FACTS))]
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


def test_decoder_prompt_reads_alike_in_training_and_inference(tokenizer):
    """Training pads prompt + answer on the right; inference pads prompts on the left so
    every answer starts in one column. T5's relative positions make the two layouts give
    the same log-probabilities, the same greedy answer and the same pointer."""
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=2), copy_head=(1, 0)).eval()
    examples = [example_from_record(_record(i)) for i in range(3)]
    examples[1]["question"] = "Was ist die Hauptstadt der Republik " + FACTS[1][0] + " im Norden?"  # longer prompt
    collator = FiDCollator(tokenizer, n_context=2, max_length=48, max_answer_len=8, prompt=True)
    batch = collator(examples)
    rows, prompt, pmask = encode_prompts(tokenizer, examples, 0)
    assert len({len(r) for r in rows}) > 1 and (pmask[:, 0] == 0).any()      # left padding is exercised
    assert (batch["labels"][:, : min(len(r) for r in rows) - 1] == -100).all()  # the prompt is not a target
    with torch.no_grad():
        out = fid(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                  decoder_input_ids=batch["decoder_input_ids"], output_attentions=True)
        logp = out.logits.log_softmax(-1)
        enc, mask = fid.encode(batch["input_ids"], batch["attention_mask"], batch["passage_mask"])
        answers = [[t for t in lab if t >= 0] for lab in batch["labels"].tolist()]
        T = max(len(a) for a in answers)
        seqs = torch.tensor([[0] + a + [0] * (T - len(a)) for a in answers])    # start token, answer, </s>
        decoder_prompt = DecoderPrompt(prompt, pmask)
        scored, _ = fid.score(enc.last_hidden_state, mask, seqs, 2, prompt=decoder_prompt)
        # candidates of one question share the prompt's cache: the same scores as read one by one
        grouped, _ = fid.score(enc.last_hidden_state.repeat_interleave(3, dim=0), mask.repeat_interleave(3, dim=0),
                               seqs.repeat_interleave(3, dim=0), 2, prompt=decoder_prompt.repeat(3), repeats=3)
        torch.testing.assert_close(grouped, scored.repeat_interleave(3), atol=1e-4, rtol=1e-4)
        pointed = fid.pointer(enc.last_hidden_state, mask, decoder_prompt)
        greedy = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                              Search(beams=1, n_best=1, max_new_tokens=6), prompt=decoder_prompt)["sequences"][:, 0]
    for b, row in enumerate(rows):
        first = len(row) - 1                               # the last prompt token predicts the answer
        expected = sum(float(logp[b, first + t, tok]) for t, tok in enumerate(answers[b]))
        assert float(scored[b]) == pytest.approx(expected, abs=1e-4)
        torch.testing.assert_close(pointed[b], out.cross_attentions[1][b, 0, first], atol=1e-5, rtol=1e-4)
        ids, toks = list(row), []                          # greedy, step by step, unpadded
        with torch.no_grad():
            for _ in range(6):
                step = fid(batch["input_ids"][b:b + 1], batch["attention_mask"][b:b + 1],
                           batch["passage_mask"][b:b + 1], decoder_input_ids=torch.tensor([ids])).logits
                toks.append(int(step[0, -1].argmax()))
                ids.append(toks[-1])
                if toks[-1] == tokenizer.eos_token_id:
                    break
        got = [t for t in greedy[b, 1:].tolist()][: len(toks)]
        assert greedy[b, 0] == 0 and got == toks, (got, toks)


def test_prompted_reader_learns_points_and_survives_save_load(tokenizer, tmp_path):
    from xqa.training import TrainConfig, train

    torch.set_num_threads(1)
    examples = [example_from_record(_record(i)) for i in range(len(FACTS))]
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


def test_fid_over_one_passage_equals_plain_mt5(tokenizer):
    torch.manual_seed(0)
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=1)).eval()
    batch = encode_passages(tokenizer, [example_from_record(_record(0, n_ctx=1))], 1, 40)
    ids, mask = batch["input_ids"][:, 0], batch["attention_mask"][:, 0]        # [1, L]
    dec = torch.tensor([[0, 5, 9, 13]])
    with torch.no_grad():
        plain = fid.t5(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits
        fused = fid(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                    decoder_input_ids=dec).logits
    torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-5)
    gen_plain = fid.t5.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, num_beams=1,
                                do_sample=False)
    gen_fid = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                           Search(beams=1, n_best=1, max_new_tokens=6))["sequences"][:, 0]
    assert gen_fid.tolist() == gen_plain.tolist()


@pytest.mark.parametrize("arch", ["mt5", "t5 v1.0", "t5 v1.1"])
def test_the_loss_on_labelled_positions_only_is_the_stock_models_loss(tokenizer, arch):
    """FiD.forward projects only the labelled positions to the vocabulary; the loss and its
    gradient are those of the stock model's forward over the whole sequence."""
    from transformers import T5Config, T5ForConditionalGeneration

    if arch == "mt5":
        t5 = build_t5(MICRO, len(tokenizer), seed=1)
    else:
        cfg = T5Config(vocab_size=len(tokenizer), pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                       tie_word_embeddings=arch == "t5 v1.0", **MICRO)
        torch.manual_seed(1)
        t5 = T5ForConditionalGeneration(cfg)
        assert cfg.scale_decoder_outputs == (arch == "t5 v1.0")
    fid = FiD(t5).eval()
    batch = encode_passages(tokenizer, [example_from_record(_record(i)) for i in range(2)], 2, 40)
    # a prompt (not labelled) and padding (not labelled) around the answers, as --decoder-prompt trains
    labels = torch.tensor([[-100, -100, -100, 5, 9, 1, -100], [-100, -100, 7, 1, -100, -100, -100]])
    dec = torch.tensor([[0, 11, 12, 13, 5, 9, 0], [0, 14, 15, 7, 0, 0, 0]])
    for with_dec in (True, False):
        kw = {"decoder_input_ids": dec} if with_dec else {}
        fid.zero_grad()
        ours = fid(batch["input_ids"], batch["attention_mask"], batch["passage_mask"], labels=labels, **kw)
        assert ours.logits is None
        ours.loss.backward()
        ours_grad = fid.t5.lm_head.weight.grad.clone()
        fid.zero_grad()
        enc, mask = fid.encode(batch["input_ids"], batch["attention_mask"], batch["passage_mask"])
        stock = fid.t5(encoder_outputs=enc, attention_mask=mask, labels=labels, use_cache=False, **kw)
        stock.loss.backward()
        torch.testing.assert_close(ours.loss, stock.loss, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ours_grad, fid.t5.lm_head.weight.grad, rtol=1e-4, atol=1e-7)
    out = fid(batch["input_ids"], batch["attention_mask"], batch["passage_mask"], labels=labels,
              decoder_input_ids=dec, output_attentions=True)
    assert len(out.cross_attentions) == MICRO.get("num_decoder_layers", MICRO["num_layers"])
    assert out.cross_attentions[0].shape[-2:] == (7, batch["input_ids"].shape[1] * batch["input_ids"].shape[2])


def test_more_decoder_than_encoder_layers_generates_and_scores(tokenizer):
    """transformers sizes a generation cache made from a T5 config by its encoder layers; the
    reader hands generate() its own cache, so an asymmetric model (e.g. --set num_decoder_layers=3)
    searches, points and scores like any other."""
    fid = FiD(build_t5({**MICRO, "num_layers": 1, "num_decoder_layers": 3}, len(tokenizer), seed=1)).eval()
    fid.copy_head = (2, 0)
    batch = encode_passages(tokenizer, [example_from_record(_record(i)) for i in range(2)], 2, 40)
    out = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                       Search(beams=3, n_best=2, max_new_tokens=5))
    assert out["sequences"].shape[:2] == (2, 2) and torch.isfinite(out["logprobs"]).all()
    greedy = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                          Search(beams=1, n_best=1, max_new_tokens=5))
    assert greedy["sequences"].shape[:2] == (2, 1)


def test_padding_passages_change_nothing(tokenizer):
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=2)).eval()
    ex = example_from_record(_record(2, n_ctx=2))
    dec = torch.tensor([[0, 7, 3]])
    with torch.no_grad():
        two = encode_passages(tokenizer, [ex], 2, 40)
        five = encode_passages(tokenizer, [ex], 5, 40)
        a = fid(**two, decoder_input_ids=dec).logits
        b = fid(**five, decoder_input_ids=dec).logits
        rel = fid.generate(**five, search=Search(beams=2, n_best=2, max_new_tokens=4))["relevance"]
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert rel.shape == (1, 2, 5)
    assert torch.all(rel[..., 2:] == 0)
    torch.testing.assert_close(rel.sum(-1), torch.ones(1, 2))


def test_locality_prior_starts_neighbour_heads_and_stays_trainable():
    """Heads 0/1 of the first encoder layer look one token back/ahead from the start."""
    cfg = dict(MICRO, num_heads=4)
    plain, local = build_t5(cfg, 50, seed=0, locality=False), build_t5(cfg, 50, seed=0)
    ids = torch.randint(3, 50, (1, 12))
    attn = {}
    for name, model in (("plain", plain), ("local", local)):
        model.encoder.set_attn_implementation("eager")                         # SDPA returns no weights
        out = model.encoder(input_ids=ids, output_attentions=True)
        attn[name] = out.attentions[0][0]                                      # [H, L, L] of layer 0
    rows = torch.arange(1, 11)
    back = attn["local"][0, rows, rows - 1]                                    # head 0: previous token
    ahead = attn["local"][1, rows, rows + 1]                                   # head 1: next token
    assert back.min() > 0.9 and ahead.min() > 0.9
    assert attn["plain"][0, rows, rows - 1].max() < 0.5                        # not so without the prior
    assert torch.allclose(attn["local"][2:], attn["plain"][2:])                 # other heads untouched
    bias = local.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
    assert bias.requires_grad
    assert locality_prior(build_t5(dict(cfg, num_heads=1), 50, locality=False)) == []  # needs two heads


def test_beam_scores_are_sequence_logprobs(tokenizer):
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=3)).eval()
    batch = encode_passages(tokenizer, [example_from_record(_record(i)) for i in range(2)], 2, 40)
    out = fid.generate(**batch, search=Search(beams=3, n_best=3, max_new_tokens=5))
    assert out["sequences"].shape[:2] == (2, 3)
    lp = out["logprobs"]
    assert torch.all(lp[:, :-1] >= lp[:, 1:])  # best first
    # recompute the first candidate's log-prob token by token
    seq = out["sequences"][0, 0]
    with torch.no_grad():
        logits = fid(batch["input_ids"][:1], batch["attention_mask"][:1], batch["passage_mask"][:1],
                     decoder_input_ids=seq[None, :-1]).logits[0].log_softmax(-1)
    total = 0.0
    for t, tok in enumerate(seq[1:].tolist()):
        total += float(logits[t, tok])
        if tok == tokenizer.eos_token_id:
            break
    assert math.isclose(total, float(lp[0, 0]), rel_tol=1e-4, abs_tol=1e-4)


# ----------------------------------------------------------------------------- learning, artifacts


def test_tiny_fid_memorises_facts_through_the_shared_loop(trained):
    lines = (trained["out"] / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    metrics = [json.loads(line) for line in lines]
    losses = [m["loss"] for m in metrics if "loss" in m]
    assert losses[-1] < 0.1 * trained["first_loss"], (trained["first_loss"], losses)
    reader = FiDReader.load(trained["out"])  # the run folder resolves to run/best
    outs = reader.read_examples(trained["examples"], beams=1)
    assert [o.text for o in outs] == [FACTS[i][1] for i in range(len(FACTS))]
    assert trained["result"]["best"] == 1.0


def test_reader_read_api_greedy_beam_and_relevance(trained):
    reader = FiDReader.load(trained["out"])
    questions, contexts = [], []
    for i in range(3):
        rec = _record(i)
        questions.append(Question(rec["id"], rec["question"], rec["lang"], tuple(rec["answers"])))
        contexts.append([Context(c["id"], c["title"], c["text"], c["lang"], c["score"], c["source"])
                         for c in rec["ctxs"]])
    beam = reader.read(questions, contexts, n_context=2, beams=4, n_best=3, max_answer_len=8)
    greedy = reader.read(questions, contexts, beams=1)
    for q, b, g in zip(questions, beam, greedy):
        assert len(b.candidates) == 3 and len(g.candidates) == 1
        assert b.text == g.text == q.answers[0]
        assert [s for _, s in b.candidates] == sorted((s for _, s in b.candidates), reverse=True)
        assert b.relevance.shape == (2,) and math.isclose(float(b.relevance.sum()), 1.0, rel_tol=1e-5)
        assert b.candidate_relevance.shape == (3, 2)
    rt = ReaderOutput.from_dict(json.loads(json.dumps(beam[0].to_dict())))
    assert rt.candidates == [(t, pytest.approx(s)) for t, s in beam[0].candidates]


def test_an_empty_candidate_gives_way_to_any_written_one(trained):
    reader = trained["reader"]
    tok = reader.tokenizer
    word = tok("Velora", add_special_tokens=False)["input_ids"]
    T = len(word) + 2
    empty = [0, 1] + [0] * (T - 2)                      # </s> first: decodes to ""
    written = [0, *word, 1]
    ex = [example_from_record(_record(0))]
    gen = {"sequences": torch.tensor([[empty, written]]), "logprobs": torch.tensor([[-0.1, -2.0]]),
           "relevance": torch.tensor([[[0.9, 0.1], [0.2, 0.8]]])}
    [out] = reader._outputs(ex, gen, 2)
    assert out.candidates == [("Velora", -2.0)] and out.candidate_relevance.shape == (1, 2)
    np.testing.assert_allclose(out.relevance, [0.2, 0.8], atol=1e-6)   # pooled over what is kept
    only_empty = {**gen, "sequences": torch.tensor([[empty, empty]]),
                  "logprobs": torch.tensor([[-0.1, float("-inf")]])}
    [out] = reader._outputs(ex, only_empty, 2)
    assert out.candidates == [("", pytest.approx(-0.1))]    # nothing else: the empty answer stays


def test_save_load_identical_generations(trained, tmp_path):
    reader = trained["reader"]
    reader.save(tmp_path / "copy")
    loaded = FiDReader.load(tmp_path / "copy")
    assert (loaded.max_length, loaded.max_answer_len, loaded.n_context) == (40, 8, 2)
    examples = trained["examples"][:4]
    a = reader.read_examples(examples, beams=3, n_best=3)
    b = loaded.read_examples(examples, beams=3, n_best=3)
    for x, y in zip(a, b):
        assert [t for t, _ in x.candidates] == [t for t, _ in y.candidates]
        np.testing.assert_allclose([s for _, s in x.candidates], [s for _, s in y.candidates], atol=1e-5)
        np.testing.assert_allclose(x.relevance, y.relevance, atol=1e-5)
    assert not list((tmp_path / "copy").rglob("*.bin")) and list((tmp_path / "copy").rglob("*.safetensors"))


def test_two_process_gloo_training_via_torchrun(tokenizer, tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    tokenizer.save_pretrained(str(tmp_path / "tok"))
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "xqa.cli", "train", "reader",
           "--train", str(data), "--out", str(tmp_path / "run"), "--config", "tiny", "--tokenizer",
           str(tmp_path / "tok"), "--n-context", "2", "--max-length", "32", "--batch-size", "2",
           "--max-steps", "2", "--log-every", "1", "--threads", "1", "--copy-attention", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert run_cfg["processes"] == 2
    state = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert state["step"] == 2 and state["done"]
    assert FiDReader.load(tmp_path / "run").read_examples([example_from_record(_record(0))], beams=1)


def test_train_reader_set_changes_the_random_architecture(tokenizer, tmp_path):
    from xqa.cli import main

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(4)), encoding="utf-8")
    tokenizer.save_pretrained(str(tmp_path / "tok"))
    base = ["train", "reader", "--train", str(data), "--config", "tiny", "--tokenizer", str(tmp_path / "tok"),
            "--n-context", "2", "--max-length", "32", "--batch-size", "2", "--max-steps", "1", "--threads", "1"]
    assert main([*base, "--out", str(tmp_path / "run"), "--set", "num_decoder_layers=3", "--set", "d_ff=200"]) == 0
    model = FiDReader.load(tmp_path / "run").model.t5
    assert (model.config.num_decoder_layers, model.config.d_ff, model.config.num_layers) == (3, 200, 2)
    assert len(model.decoder.block) == 3
    assert main([*base, "--out", str(tmp_path / "bad"), "--set", "num_decoder_layer=3"]) == 1
    assert main([*base, "--out", str(tmp_path / "bad2"), "--set", "3"]) == 1
    # --decoder-prompt is saved with the reader; a reader trained without one (or a hub mT5) can learn it
    assert main([*base, "--out", str(tmp_path / "prompted"), "--decoder-prompt", "--copy-attention", "2"]) == 0
    prompted = FiDReader.load(tmp_path / "prompted")
    assert prompted.decoder_prompt and prompted.model.copy_weight == 2.0   # scored as it was trained
    init = ["train", "reader", "--train", str(data), "--n-context", "2", "--max-length", "32", "--batch-size", "2",
            "--max-steps", "1", "--threads", "1", "--decoder-prompt"]
    assert main([*init, "--init", str(tmp_path / "run"), "--out", str(tmp_path / "tuned")]) == 0
    assert FiDReader.load(tmp_path / "tuned").decoder_prompt


def test_tune_fusion_in_two_processes_reads_and_tunes_as_one(trained, tmp_path):
    """Under torchrun the processes share the reading (strided shards) and rank 0 tunes: the
    reader outputs, gathered back in question order, and the tuned weights are those of one process."""
    trained["reader"].save(tmp_path / "model")
    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}

    def tune(name: str, launcher: list[str]) -> dict:
        cmd = [*launcher, "-m", "xqa.cli", "tune", "fusion", "--model", str(tmp_path / "model"), "--dev", str(dev),
               "--n-context", "2", "--beams", "3", "--n-best", "3", "--batch-size", "2", "--threads", "1",
               "--passes", "1", "--cache", str(tmp_path / name), "--out", str(tmp_path / f"{name}.json")]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = [json.loads(line) for line in (tmp_path / name / "dev.beam3.jsonl").read_text().splitlines()]
        return {"rows": rows, "best": json.loads((tmp_path / f"{name}.json").read_text())}

    one = tune("one", [sys.executable])
    two = tune("two", [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "2"])
    assert [r["id"] for r in two["rows"]] == [f"q{i}" for i in range(len(FACTS))]
    for a, b in zip(one["rows"], two["rows"]):
        assert [c[0] for c in a["candidates"]] == [c[0] for c in b["candidates"]]
        np.testing.assert_allclose([c[1] for c in a["candidates"]], [c[1] for c in b["candidates"]], atol=1e-4)
    assert two["best"]["dev_f1"] == pytest.approx(one["best"]["dev_f1"])


# ----------------------------------------------------------------------------- evidence fusion


def _softmax(x):
    e = [math.exp(v - max(x)) for v in x]
    return [v / sum(e) for v in e]


def test_fusion_matches_hand_computation():
    cands = [("Paris", -0.2), ("Lyon", -1.5), ("Parigi", -2.0)]
    ctxs = ["The capital is Paris, not Lyon.", "Lyon is a city."]
    r, R, beta, gamma, eps = [0.8, 0.2], [12.0, 10.0], 2.0, 0.5, 0.1
    # by hand: P(i) = softmax(beta r + gamma R); s_i = logprob + log(eps) where the candidate is absent
    P = _softmax([beta * r[i] + gamma * R[i] for i in range(2)])
    present = [[1, 1, 0], [0, 1, 0]]
    expected = [0.0, 0.0, 0.0]
    for i in range(2):
        s = [lp + (0.0 if present[i][j] else math.log(eps)) for j, (_, lp) in enumerate(cands)]
        for j, w in enumerate(_softmax(s)):
            expected[j] += P[i] * w
    got = {c.text: c.score for c in fuse_evidence(cands, r, R, ctxs, beta=beta, gamma=gamma, miss=eps)}
    for (text, _), e in zip(cands, expected):
        assert got[text] == pytest.approx(e, rel=1e-9)
    assert sum(got.values()) == pytest.approx(1.0)
    assert match_matrix([c for c, _ in cands], ctxs).tolist() == present


def test_fusion_is_stable_for_large_scores():
    cands = [("a", -1000.0), ("b", -1001.0)]
    out = fuse_evidence(cands, [0.5, 0.5], [1e4, -1e4], ["a", "b"], beta=1.0, gamma=1.0)
    assert all(math.isfinite(c.score) for c in out) and out[0].text == "a"


def test_log_softmax_of_a_row_without_mass_is_minus_infinity_not_nan():
    import warnings
    from types import SimpleNamespace

    from reader.evidence import log_softmax, logsumexp

    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "invalid value" warnings either
        out = log_softmax(x, axis=1)
        total = logsumexp(x, axis=1)
    assert np.isneginf(out[0]).all()
    assert np.exp(out[1]).tolist() == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e), 0.0])
    assert np.isneginf(total[0]) and total[1] == pytest.approx(math.log(1 + math.e))
    # a dev question the reader gave no candidate picks its (padding) first slot, not a NaN argmax
    s = prepare([SimpleNamespace(candidates=[], relevance=np.array([1.0])),
                 SimpleNamespace(candidates=[("Paris", -0.1)], relevance=np.array([1.0]))],
                [[Context("p", "", "Paris", "en", 1.0, "bm25")]] * 2, [["Paris"], ["Paris"]], ["en", "en"],
                simple_score)
    assert choose(s, FusionParams()).tolist() == [0, 0] and evaluate(s, FusionParams()) == (0.5, 0.5)


def test_duplicates_summed_with_best_surface_form():
    cands = [("Paris", -1.0), ("paris.", -0.9), ("Rome", -0.5)]
    out = fuse_evidence(cands, [1.0], [0.0], ["Paris is in France; Rome is not."], beta=0.0, gamma=0.0, miss=0.5)
    # 'paris.' scores higher than 'Paris' alone; it is shown without its full stop (tidy_answer)
    assert [c.text for c in out] == ["paris", "Rome"]
    w = _softmax([-1.0, -0.9, -0.5])
    assert out[0].score == pytest.approx(w[0] + w[1]) and out[1].score == pytest.approx(w[2])
    assert out[0].reader_score == -0.9
    assert [c.text for c in reader_only(cands)] == ["paris", "Rome"]


def test_translated_candidate_stays_scorable_and_can_win():
    ctxs = ["Die Hauptstadt von Italien ist Rom."]
    cands = [("Rome", -0.1), ("Roma", -3.0)]  # neither is a span of the German passage
    out = fuse_evidence(cands, [1.0], [3.0], ctxs, beta=1.0, gamma=1.0)
    assert out[0].text == "Rome" and out[0].score > 0 and out[1].score > 0
    # a span candidate gains over a non-span one, but a confident translation still wins
    out2 = fuse_evidence([("Rome", -0.1), ("Rom", -1.0)], [1.0], [3.0], ctxs, miss=0.1)
    assert out2[0].text == "Rom"
    out3 = fuse_evidence([("Rome", -0.1), ("Rom", -6.0)], [1.0], [3.0], ctxs, miss=0.1)
    assert out3[0].text == "Rome"


def test_miss_one_is_reader_only_and_answer_record():
    cands = [("x", -0.3), ("y", -0.4)]
    ctxs = [Context("1", "t", "x here", "en", 1.0, "dense"), Context("2", "t", "y here", "en", 9.0, "dense")]
    fused = fuse_evidence(cands, [0.3, 0.7], [1.0, 9.0], ctxs, beta=3.0, gamma=1.0, miss=1.0)
    assert [c.score for c in fused] == pytest.approx([c.score for c in reader_only(cands)])
    ans = build_answer("q", cands, [0.3, 0.7], ctxs, FusionParams(beta=0.0, gamma=1.0, miss=0.1))
    assert ans.text == "y" and [e.context.id for e in ans.evidence] == ["2", "1"]
    assert build_answer("q", cands, [0.3, 0.7], ctxs, None).text == "x"


def test_tuning_finds_the_informative_signal():
    """Dev set where the reader's top candidate is wrong half of the time and the passage with
    the best retriever score holds the right answer: tuning must learn to use γ."""
    rng = np.random.default_rng(0)
    outputs, contexts, answers = [], [], []
    for q in range(40):
        gold, wrong = f"g{q}", f"w{q}"
        flip = q % 2 == 0
        cands = [(wrong, -0.5), (gold, -0.9)] if flip else [(gold, -0.5), (wrong, -0.9)]
        ctx = [Context("a", "", f"about {gold}", "en", float(5 + rng.random()), "dense"),
               Context("b", "", f"about {wrong}", "en", float(rng.random()), "dense")]
        outputs.append(ReaderOutput(cands, np.array([0.5, 0.5], np.float32)))
        contexts.append(ctx)
        answers.append([gold])
    s = prepare(outputs, contexts, answers, ["en"] * 40, simple_score)
    assert evaluate(s, None) == (0.5, 0.5)
    best = tune_fusion(s, passes=2)
    assert best["gamma"] > 0 and best["dev_f1"] == 1.0 and best["reader_only_f1"] == 0.5
    picked = choose(s, FusionParams(best["beta"], best["gamma"], best["miss"]))
    assert all(outputs[q].candidates[picked[q]][0] == f"g{q}" for q in range(40))


def test_score_predictions_macro_and_simple_score():
    examples = [{"answers": ["a b"], "lang": "en"}, {"answers": ["c"], "lang": "de"}, {"answers": [], "lang": "en"}]
    s = score_predictions(examples, ["a b", "x", "ignored"])
    assert s["em"] == 0.5 and s["f1"] == 0.5 and s["macro_f1"] == 0.5
    assert simple_score("the a", ["a b"], "en") == (0.0, 0.5)


def test_soft_match_credits_the_passage_a_translation_came_from():
    ctxs = ["Die Hauptstadt ist Rom.", "Paris liegt in Frankreich."]
    cands = [("Rome", -0.7), ("Paris", -0.6)]
    cand_rel = np.array([[0.9, 0.1], [0.5, 0.5]])  # 'Rome' was generated looking at passage 0
    hard = fuse_evidence(cands, [0.5, 0.5], [9.0, 0.0], ctxs, beta=0.0, gamma=1.0, miss=0.1)
    soft = fuse_evidence(cands, [0.5, 0.5], [9.0, 0.0], ctxs, beta=0.0, gamma=1.0, miss=0.1,
                         candidate_relevance=cand_rel)
    assert hard[0].text == "Paris" and soft[0].text == "Rome"
    assert sum(c.score for c in soft) == pytest.approx(1.0)
    out = ReaderOutput(cands, np.array([0.5, 0.5], np.float32), cand_rel.astype(np.float32))
    s = prepare([out], [[Context("a", "", ctxs[0], "de", 9.0, "d"), Context("b", "", ctxs[1], "de", 0.0, "d")]],
                [["Rome"]], ["en"], simple_score)
    assert choose(s, FusionParams(0.0, 1.0, 0.1, soft=True))[0] == 0
    assert choose(s, FusionParams(0.0, 1.0, 0.1, soft=False))[0] == 1


def test_select_contexts_keeps_gold_and_fused_order():
    from reader.fid.data import select_contexts

    ctxs = list("abcdefgh")
    gold = [False, False, False, False, True, False, True, False]
    assert select_contexts(ctxs, 3, gold) == ["a", "e", "g"]      # gold 'e', 'g' + best other 'a', fused order
    assert select_contexts(ctxs, 2, gold) == ["a", "e"]           # one slot stays non-gold
    assert select_contexts(ctxs, 3, [False] * 8) == ["a", "b", "c"]
    assert select_contexts(ctxs, 1, gold) == ["e"]
    # priorities: the passage holding the answer itself (2) beats an earlier gold one (1)
    assert select_contexts(ctxs, 2, [0, 0, 1, 0, 2, 0, 1, 0]) == ["a", "e"]
    assert select_contexts(ctxs, 3, [0, 0, 1, 0, 2, 0, 1, 0]) == ["a", "c", "e"]


def test_train_contexts_answer_puts_the_answer_passage_first_and_skips_the_rest(tmp_path, capsys):
    from xqa.evaluation.reading import load_examples

    def ctx(pid, text):
        return {"id": pid, "title": "", "text": text, "score": 1.0}

    rows = [
        {"id": "q1", "question": "Where was Ana born?", "answers": ["Oslo"], "lang": "en",
         "positive_ids": ["de-1"],  # gold by id, but in German: no span of the target
         "ctxs": [ctx("x", "Bob was born in Rome."), ctx("de-1", "Ana wurde in der Hauptstadt Norwegens geboren."),
                  ctx("en-1", "Ana was born in Oslo.")]},
        {"id": "q2", "question": "Where was Eva born?", "answers": ["Lima"], "lang": "en",
         "ctxs": [ctx("y", "Eva is a painter."), ctx("z", "Max was born in Quito.")]},
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gold = load_examples(str(path), 2, need_answers=True, contexts="gold")
    assert [e["id"] for e in gold] == ["q1", "q2"]
    assert gold[0]["texts"][1].startswith("Ana wurde")                 # first gold by rank: the German one
    ans = load_examples(str(path), 2, need_answers=True, contexts="answer")
    assert [e["id"] for e in ans] == ["q1"]                             # q2: nothing holds "Lima"
    assert ans[0]["texts"] == ["Bob was born in Rome.", "Ana was born in Oslo."]  # fused order kept
    assert "1 of 2 questions skipped" in capsys.readouterr().out


def test_diagnose_copy_probe_batches_and_cli(tmp_path):
    import random

    from xqa.cli import main
    from xqa.tools.diagnose_copy import MARKER, make_batch

    x, y = make_batch(random.Random(0), 16, 12, 3, 30)
    assert x.shape == (16, 13) and y.shape == (16, 4)
    for row, target in zip(x.tolist(), y.tolist()):
        assert row.count(MARKER) == 1 and row[-1] == 1 and target[-1] == 1
        at = row.index(MARKER)
        assert row[at + 1: at + 4] == target[:3]
    out = tmp_path / "copy.json"
    assert main(["diagnose", "copy", "--steps", "2", "--every", "1", "--length", "10", "--vocab", "30",
                 "--eval-size", "4", "--threads", "1", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(0.0 <= r["plain_acc"] <= 1.0 and 0.0 <= r["locality_acc"] <= 1.0 for r in rows)
    assert rows[0]["plain_loss"] != rows[0]["locality_loss"]  # the prior changes the model
    assert main(["diagnose", "copy", "--length", "3"]) == 1   # no room for marker + answer: a clear error


# ----------------------------------------------------------------------------- span-constrained candidates


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


def test_answer_text_drops_the_full_stop_a_span_brings_along():
    from reader.fid.inference import answer_text

    assert answer_text(" 1958. ") == "1958"
    assert answer_text("東京。") == "東京" and answer_text("ঢাকা।") == "ঢাকা"
    assert answer_text("Банк «Киники»") == "Банк «Киники»"       # closing quotes are part of names
    assert answer_text(".") == "." and answer_text("") == ""


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
    examples = [example_from_record(_record(i)) for i in range(4)]
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


def test_repeats_are_the_same_tokens_up_to_the_first_eos():
    """The free search pads a finished candidate, the span search repeats </s>: the same
    answer from both is one candidate (fusion would otherwise count it twice)."""
    from reader.fid.model import _drop_repeats

    seqs = torch.tensor([[[0, 7, 8, 1, 0, 0], [0, 7, 8, 1, 1, 1], [0, 7, 1, 0, 0, 0], [0, 7, 8, 9, 1, 0]]])
    out = _drop_repeats(seqs, torch.tensor([[-1.0, -1.0, -2.0, -3.0]]), pad=0, eos=1)
    assert out.tolist() == [[-1.0, float("-inf"), -2.0, -3.0]]


def test_diagnose_reading_reads_the_evidence_passage_alone(trained, tmp_path, capsys):
    from xqa.cli import main

    rows = []
    for i in range(len(FACTS)):
        rec = _record(i)
        rec["relation"] = "capital"
        rows.append(rec)
    # listed evidence wins over a passage that merely contains the answer string (about something else)
    decoy = {"id": "d", "title": "Dornik", "text": "Velora is far from Dornik.", "lang": "en", "score": 9.0}
    rows[0]["positive_ids"] = ["p0"]
    rows[0]["ctxs"] = [decoy] + rows[0]["ctxs"]
    rows.append({"id": "qx", "question": "What is the capital of Nowhere?", "answers": ["Atlantis"],
                 "lang": "en", "ctxs": rows[1]["ctxs"]})                       # no passage holds it: skipped
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from xqa.tools.diagnose_reading import evidence_passage
    from xqa.io import read_results

    assert evidence_passage(read_results(path)[0]).id == "p0"
    out = tmp_path / "reading.json"
    assert main(["diagnose", "reading", "--model", str(trained["out"]), "--results", str(path),
                 "--out", str(out), "--threads", "1"]) == 0
    assert "6 questions read with their evidence passage (1 skipped" in capsys.readouterr().out
    groups = json.loads(out.read_text())["groups"]
    assert groups["all"]["n"] == 6 and groups["relation capital"]["n"] == 6
    assert groups["all"]["em"] == 1.0 and groups["all"]["copied"] == 1.0   # the micro reader memorised them
    assert groups["lang en"]["n"] + groups["lang de"]["n"] == 6
    assert 0 <= groups["all"]["ce_first"] < 1.0


def test_diagnose_reading_with_span_beams_reads_through_the_pointer(guided, tmp_path, capsys):
    from xqa.cli import main

    guided["guided"]["reader"].save(tmp_path / "reader")
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(len(FACTS))), encoding="utf-8")
    out = tmp_path / "reading.json"
    assert main(["diagnose", "reading", "--model", str(tmp_path / "reader"), "--results", str(path),
                 "--span-beams", "2", "--out", str(out), "--threads", "1"]) == 0
    groups = json.loads(out.read_text())["groups"]
    assert groups["all"]["n"] == 6 and groups["all"]["em"] == 1.0 and groups["all"]["copied"] == 1.0


def test_tokenizer_keeps_zero_width_joiners_and_normalises_width(tmp_path):
    from transformers import AutoTokenizer

    from xqa.tokenizer import train_tokenizer

    texts = ["కోల్‌కతా భారతదేశంలోని ఒక నగరం.", "Tokyo is a city.", "কলকাতা‍ শহর"] * 30
    tok = AutoTokenizer.from_pretrained(str(train_tokenizer(texts, tmp_path / "tok", vocab_size=400)))
    for text, expected in [("కోల్‌కతా", "కోల్‌కతా"), ("Ｔｏｋｙｏ", "Tokyo")]:
        assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == expected


def test_bench_reader_times_reading_after_a_decoder_prompt(tmp_path, capsys):
    from xqa.cli import main

    args = ["bench", "reader", "--sizes", "tiny", "--passages", "1,3", "--length", "12", "--answer-len", "2",
            "--reps", "1", "--train-passages", "1", "--train-batch", "2", "--train-steps", "1", "--threads", "1"]
    assert main([*args, "--prompt-tokens", "6", "--json", str(tmp_path / "b.json")]) == 0
    figures = json.loads((tmp_path / "b.json").read_text())
    assert figures["prompt_tokens"] == 6 and [r["passages"] for r in figures["latency"]] == [1, 3]
    assert all(r["greedy_ms"] > 0 and r["beam_ms"] > 0 for r in figures["latency"])
    assert "after a decoder prompt of 6 tokens" in capsys.readouterr().out
    assert main([*args, "--prompt-tokens", "1"]) == 1
