"""The FiD model: equivalences with the stock T5 models, losses, decoder prompts, search scores."""
from __future__ import annotations

import math

import pytest
import torch
from fid_facts import FACTS, MICRO, record

from reader.fid.data import FiDCollator, encode_passages, encode_prompts, example_from_record
from reader.fid.model import DecoderPrompt, FiD, Search, build_t5, locality_prior
from reader.fid.task import copy_attention_loss


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


def test_decoder_prompt_reads_alike_in_training_and_inference(tokenizer):
    """Training pads prompt + answer on the right; inference pads prompts on the left so
    every answer starts in one column. T5's relative positions make the two layouts give
    the same log-probabilities, the same greedy answer and the same pointer."""
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=2), copy_head=(1, 0)).eval()
    examples = [example_from_record(record(i)) for i in range(3)]
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


def test_fid_over_one_passage_equals_plain_mt5(tokenizer):
    torch.manual_seed(0)
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=1)).eval()
    batch = encode_passages(tokenizer, [example_from_record(record(0, n_ctx=1))], 1, 40)
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
    batch = encode_passages(tokenizer, [example_from_record(record(i)) for i in range(2)], 2, 40)
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
    batch = encode_passages(tokenizer, [example_from_record(record(i)) for i in range(2)], 2, 40)
    out = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                       Search(beams=3, n_best=2, max_new_tokens=5))
    assert out["sequences"].shape[:2] == (2, 2) and torch.isfinite(out["logprobs"]).all()
    greedy = fid.generate(batch["input_ids"], batch["attention_mask"], batch["passage_mask"],
                          Search(beams=1, n_best=1, max_new_tokens=5))
    assert greedy["sequences"].shape[:2] == (2, 1)


def test_padding_passages_change_nothing(tokenizer):
    fid = FiD(build_t5(MICRO, len(tokenizer), seed=2)).eval()
    ex = example_from_record(record(2, n_ctx=2))
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
    batch = encode_passages(tokenizer, [example_from_record(record(i)) for i in range(2)], 2, 40)
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


def test_repeats_are_the_same_tokens_up_to_the_first_eos():
    """The free search pads a finished candidate, the span search repeats </s>: the same
    answer from both is one candidate (fusion would otherwise count it twice)."""
    from reader.fid.model import _drop_repeats

    seqs = torch.tensor([[[0, 7, 8, 1, 0, 0], [0, 7, 8, 1, 1, 1], [0, 7, 1, 0, 0, 0], [0, 7, 8, 9, 1, 0]]])
    out = _drop_repeats(seqs, torch.tensor([[-1.0, -1.0, -2.0, -3.0]]), pad=0, eos=1)
    assert out.tolist() == [[-1.0, float("-inf"), -2.0, -3.0]]
