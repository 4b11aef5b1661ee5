"""FiD reader inputs: passages formatted in fused order, answer targets, copy-attention targets,
the contexts chosen for training, the tokenizer."""
from __future__ import annotations

import json

import torch
from fid_facts import FACTS, record

from reader.fid.data import (
    FiDCollator,
    copy_attention_targets,
    encode_passages,
    example_from_record,
    format_passage,
)


def test_passages_formatted_in_given_order_and_padded(tokenizer):
    rec = record(1, n_ctx=2)
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
    ex = example_from_record({**record(0), "answers": ["Velora", "Velora City"]})
    batch = FiDCollator(tokenizer, n_context=3, max_length=12, max_answer_len=8)([ex])
    assert batch["input_ids"].shape == (1, 3, 12)
    labels = batch["labels"][0]
    assert tokenizer.decode(labels[labels >= 0], skip_special_tokens=True) == "Velora"
    assert labels[labels >= 0][-1].item() == tokenizer.eos_token_id


def test_copy_targets_point_at_the_answer_where_a_passage_holds_it(tokenizer):
    examples = [example_from_record(record(i)) for i in (0, 1)]      # gold first, then gold second
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


def test_tokenizer_keeps_zero_width_joiners_and_normalises_width(tmp_path):
    from transformers import AutoTokenizer

    from xqa.tokenizer import train_tokenizer

    texts = ["కోల్‌కతా భారతదేశంలోని ఒక నగరం.", "Tokyo is a city.", "কলকাতা‍ শহর"] * 30
    tok = AutoTokenizer.from_pretrained(str(train_tokenizer(texts, tmp_path / "tok", vocab_size=400)))
    for text, expected in [("కోల్‌కతా", "కోల్‌కతా"), ("Ｔｏｋｙｏ", "Tokyo")]:
        assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == expected
