"""The FiD warm-started from an encoder (BERT2BERT): the decoder is made of the encoder's layers,
the embeddings are one matrix, the same FiD code trains and reads it, it saves and loads back
exactly, and it reads on a CPU in bf16 or int8."""
from __future__ import annotations

import json

import pytest
import torch

from reader.fid.warm import WarmStart, spread


def _bert(vocab: int, layers: int = 3, seed: int = 0):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                     intermediate_size=64, pad_token_id=1, attention_probs_dropout_prob=0.0)
    return BertModel(cfg, add_pooling_layer=False)


@pytest.fixture(scope="module")
def tokenizer(converted_e5):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(converted_e5))


EXAMPLE = {"id": "q1", "question": "Where is Paris?", "lang": "en", "answers": ["France"],
           "titles": ["Paris", "Rome"], "texts": ["Paris is the capital of France.", "Rome is in Italy."]}


def _contexts():
    from xqa.records import Context

    return [Context(id=f"p{i}", title=t, text=x, lang="en", score=1.0 - i, source="test")
            for i, (t, x) in enumerate(zip(EXAMPLE["titles"], EXAMPLE["texts"]))]


def test_decoder_layers_are_spread_over_the_encoder_first_and_last_included():
    assert spread(12, 4) == [0, 4, 7, 11]
    assert spread(12, 1) == [11]
    assert spread(12, 0) == list(range(12)) == spread(12, 12)
    assert spread(3, 2) == [0, 2]


def test_the_decoder_starts_as_the_encoders_layers_with_one_embedding_matrix():
    from reader.fid import warm

    enc = _bert(100, layers=3)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    model = warm.build(enc, WarmStart(decoder_layers=2), start=0, eos=2, pad=1)
    dec = model.decoder.bert.encoder.layer
    for j, i in enumerate(spread(3, 2)):
        for name in ("attention.self.query.weight", "attention.output.dense.weight", "intermediate.dense.weight",
                     "output.LayerNorm.weight"):
            assert torch.equal(dec[j].state_dict()[name], before[f"encoder.layer.{i}.{name}"]), (j, name)
        assert hasattr(dec[j], "crossattention")
    emb = model.encoder.embeddings.word_embeddings.weight
    assert model.decoder.bert.embeddings.word_embeddings.weight is emb
    assert model.decoder.cls.predictions.decoder.weight is emb
    assert torch.equal(model.decoder.bert.embeddings.position_embeddings.weight,
                       before["embeddings.position_embeddings.weight"])
    assert model.config.decoder_start_token_id == 0 and model.config.eos_token_id == 2
    shared = warm.build(_bert(100, layers=3), WarmStart(decoder_layers=0, share=True), start=0, eos=2, pad=1)
    for e, d in zip(shared.encoder.encoder.layer, shared.decoder.bert.encoder.layer):
        assert d.attention is e.attention and d.intermediate is e.intermediate and d.output is e.output
    n_shared = sum(p.numel() for p in shared.parameters())
    n_own = sum(p.numel() for p in warm.build(_bert(100, layers=3), WarmStart(decoder_layers=3), start=0, eos=2,
                                             pad=1).parameters())
    assert n_shared < n_own
    with pytest.raises(ValueError, match="sharing"):
        warm.build(_bert(100, layers=3), WarmStart(decoder_layers=2, share=True), start=0, eos=2, pad=1)


def test_answer_targets_carry_no_start_token(tokenizer):
    from reader.fid.data import encode_answers

    labels = encode_answers(tokenizer, ["France", "the capital of Finland"], 24)
    for row in labels.tolist():
        real = [t for t in row if t >= 0]
        assert real[-1] == tokenizer.eos_token_id and tokenizer.cls_token_id not in real
    assert tokenizer.convert_ids_to_tokens(labels[0][labels[0] >= 0].tolist()) == ["▁France", "</s>"]
    cut = encode_answers(tokenizer, ["one two three four five six"], 3)
    assert cut.shape[1] == 3 and cut[0, -1] == tokenizer.eos_token_id


def test_a_warm_started_fid_learns_an_answer_and_loads_back_exactly(tokenizer, tmp_path):
    from reader.fid.data import FiDCollator
    from reader.fid.inference import FiDReader
    from xqa.records import Question

    reader = FiDReader.warm_start(_bert(len(tokenizer)), tokenizer, WarmStart(decoder_layers=2), n_context=2,
                                  max_length=32, precision="fp32")
    model = reader.model
    assert model.warm and model.decoder_layers == 2
    collate = FiDCollator(tokenizer, 2, 32, 8, start_id=model.config.decoder_start_token_id)
    batch = collate([EXAMPLE])
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    losses = []
    for _ in range(30):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    passage_mask=batch["passage_mask"], labels=batch["labels"])
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(out.loss.detach()))
    assert losses[-1] < 0.2 * losses[0]
    question = Question(id="q1", question=EXAMPLE["question"], lang="en")
    read = reader.read([question], [_contexts()], beams=2, n_best=2)[0]
    assert read.candidates[0][0] == "France"
    assert len(read.relevance) == 2 and abs(float(sum(read.relevance)) - 1) < 1e-5
    reader.save(tmp_path / "fid")
    cfg = json.loads((tmp_path / "fid" / "config.json").read_text())
    assert cfg["warm_start"] == {"decoder_layers": 2, "share": False} and cfg["precision"] == "fp32"
    emb_bytes = model.t5.encoder.embeddings.word_embeddings.weight.numel() * 4
    assert (tmp_path / "fid" / "model" / "model.safetensors").stat().st_size < 1.5 * emb_bytes   # stored once
    loaded = FiDReader.load(tmp_path / "fid")
    again = loaded.read([question], [_contexts()], beams=2, n_best=2)[0]
    assert again.candidates == read.candidates
    assert loaded.model.t5.decoder.cls.predictions.decoder.weight is \
        loaded.model.t5.encoder.embeddings.word_embeddings.weight


def test_cpu_precisions_read_and_a_quantised_reader_is_not_saved(tokenizer, tmp_path):
    from reader.fid.inference import FiDReader
    from xqa.errors import XqaError
    from xqa.records import Question

    reader = FiDReader.warm_start(_bert(len(tokenizer)), tokenizer, WarmStart(decoder_layers=1), n_context=2,
                                  max_length=32, max_answer_len=4, precision="fp32")
    question = Question(id="q1", question=EXAMPLE["question"], lang="en")
    int8 = reader.with_precision("int8")
    assert int8.cpu_precision() == "int8" and reader.cpu_precision() == "fp32"
    kinds = {type(m).__module__ for m in int8.model.modules()}
    assert any("quantized" in k for k in kinds)
    assert not any("quantized" in type(m).__module__ for m in reader.model.modules())   # the original is left
    assert int8.read([question], [_contexts()], beams=2, n_best=2)[0].candidates
    # int8 quantises activations with one scale per batch: each question is read as its own batch,
    # so its answer does not depend on the questions read beside it
    from xqa.records import Context

    other = Question(id="q2", question="Which river flows through the city of Rome in central Italy?", lang="en")
    long = [Context(id="x", title="Tiber", text="The Tiber flows through Rome. " * 5, lang="en", score=1.0,
                    source="test")]
    for cpu in (int8, reader.with_precision("bf16"), reader):   # bf16 and fp32 round by the batch's shape
        together = cpu.read([question, other], [_contexts(), long], beams=2, n_best=2, batch_size=8)
        alone = [cpu.read([q], [c], beams=2, n_best=2)[0] for q, c in ((question, _contexts()), (other, long))]
        assert [o.candidates for o in together] == [o.candidates for o in alone], cpu.cpu_precision()
    assert reader.with_precision("bf16").read([question], [_contexts()], beams=2, n_best=2)[0].candidates
    with pytest.raises(XqaError, match="int8"):
        int8.save(tmp_path / "q")
    reader.save(tmp_path / "fid")
    assert FiDReader.load(tmp_path / "fid", precision="int8").cpu_precision() == "int8"


def test_train_reader_warm_starts_a_fid_from_an_encoder_folder(tokenizer, tmp_path):
    import contextlib
    import io

    from reader.fid.inference import FiDReader
    from xqa.cli import main

    enc = tmp_path / "encoder"
    _bert(len(tokenizer), layers=2).save_pretrained(str(enc))
    tokenizer.save_pretrained(str(enc))
    record = {"id": "q1", "question": EXAMPLE["question"], "lang": "en", "answers": EXAMPLE["answers"],
              "ctxs": [{"id": f"p{i}", "title": t, "text": x} for i, (t, x) in
                       enumerate(zip(EXAMPLE["titles"], EXAMPLE["texts"]))]}
    (tmp_path / "train.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = main(["train", "reader", "--family", "fid", "--init", str(enc), "--train", str(tmp_path / "train.jsonl"),
                     "--out", str(tmp_path / "run"), "--n-context", "2", "--max-length", "32", "--decoder-layers", "1",
                     "--max-steps", "2", "--batch-size", "1", "--save-every", "100"])
    assert code == 0, said.getvalue()[-2000:]
    cfg = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert cfg["warm_start"] == {"decoder_layers": 1, "share": False}
    reader = FiDReader.load(tmp_path / "run")
    assert reader.model.decoder_layers == 1 and reader.model.t5.config.encoder.num_hidden_layers == 2


def test_the_cpu_check_records_each_precision_and_auto_takes_a_passed_one(tokenizer, tmp_path):
    from reader.fid.inference import FiDReader
    from reader.fid.runtime import build, read_record
    from reader.registry import get
    import xqa.encoders.runtime as rt

    reader = FiDReader.warm_start(_bert(len(tokenizer)), tokenizer, WarmStart(decoder_layers=1), n_context=2,
                                  max_length=32, max_answer_len=3)
    reader.save(tmp_path / "fid")
    family = get("fid")
    assert family.runtime_wanted(tmp_path / "fid")
    record = build(tmp_path / "fid", threads=1, progress=lambda line: None, questions=2)
    assert read_record(tmp_path / "fid") == record
    assert {"fp32", "int8"} <= set(record["measured"]) and record["cpu"] == rt.cpu_features()
    assert record["measured"][record["choice"]]["passed"]
    assert record["choice"] == rt.choose(record["measured"], "questions_per_s")
    for name, r in record["measured"].items():
        assert r["questions_per_s"] > 0 and (name == "fp32" or 0 <= r["agreement"] <= 1)
    assert FiDReader.load(tmp_path / "fid").cpu_precision() == record["choice"]


def test_a_generated_worlds_mt5_reader_has_no_cpu_check(tiny_pipeline):
    from reader.registry import family_of, get
    from xqa.config import PipelineConfig

    cfg = PipelineConfig.load(tiny_pipeline)
    folder = cfg.path(cfg.reader.model)
    assert family_of(folder) is get("fid") and not get("fid").runtime_wanted(folder)


def test_bench_reader_times_a_fid_reading_every_passage_it_is_given(tokenizer, tmp_path, monkeypatch, capsys):
    from reader.fid.inference import FiDReader
    from xqa.cli import main

    reader = FiDReader.warm_start(_bert(len(tokenizer)), tokenizer, WarmStart(decoder_layers=1), n_context=2,
                                  max_length=32, max_answer_len=2, precision="fp32")
    reader.save(tmp_path / "fid")
    read, passages_read = FiDReader.read, []

    def spy(self, *args, **kwargs):
        out = read(self, *args, **kwargs)
        passages_read.append(len(out[0].relevance))
        return out

    monkeypatch.setattr(FiDReader, "read", spy)
    assert main(["bench", "reader", "--reader", str(tmp_path / "fid"), "--passages", "1,4", "--questions", "2",
                 "--precisions", "fp32", "--threads", "1", "--json", str(tmp_path / "bench.json")]) == 0
    # one warm-up read, then 2 questions with 1 passage and 2 with 4: more than the reader's n_context of 2
    assert passages_read == [1, 1, 1, 4, 4]
    rows = json.loads((tmp_path / "bench.json").read_text())["rows"]
    assert [(r["precision"], r["passages"], r["questions"]) for r in rows] == [("fp32", 1, 2), ("fp32", 4, 2)]
    assert "| fp32 | 4 |" in capsys.readouterr().out


def test_a_warm_fid_returns_cross_attention_in_training_and_in_scoring():
    """Relevance and guided attention read the decoder's cross-attention weights: every model inside
    the decoder reads with eager attention, and both the training pass and candidate scoring return
    one weight tensor per decoder layer."""
    from transformers import PreTrainedModel

    from reader.fid import warm
    from reader.fid.model import FiD

    fid = FiD(warm.build(_bert(100), WarmStart(decoder_layers=2), start=0, eos=2, pad=1))
    kinds = {m.config._attn_implementation for m in fid.t5.decoder.modules() if isinstance(m, PreTrainedModel)}
    assert kinds == {"eager"}
    ids = torch.randint(3, 100, (2, 3, 6))
    att, pmask = torch.ones_like(ids), torch.ones(2, 3)
    out = fid(ids, att, pmask, labels=torch.tensor([[5, 2], [6, 2]]), output_attentions=True)
    assert len(out.cross_attentions) == 2 and out.cross_attentions[0].shape[-1] == 3 * 6
    enc, mask = fid.encode(ids, att, pmask)
    logprobs, relevance = fid.score(enc.last_hidden_state, mask, torch.tensor([[0, 5, 2], [0, 6, 2]]), 3)
    assert logprobs.shape == (2,) and torch.allclose(relevance.sum(1), torch.ones(2))


def test_auto_reads_a_fid_in_what_its_record_chose_here_else_by_the_cpu(tmp_path, monkeypatch):
    """auto: the record's choice by xqa.encoders.runtime.choose on a CPU like the one it was measured
    on, whatever this CPU's bf16; elsewhere, or without a record, bf16 where native, else fp32."""
    import json

    import reader.fid.precision as fp
    import xqa.encoders.runtime as rt

    (tmp_path / fp.RECORD).write_text(json.dumps({
        "measured": {"fp32": {"questions_per_s": 1.0, "passed": True},
                     "int8": {"questions_per_s": 3.0, "passed": True}},
        "choice": "fp32", "cpu": rt.cpu_features()}))
    for native in (False, True):
        monkeypatch.setattr(fp, "bf16_supported", lambda: native)
        assert fp.resolve(tmp_path, "auto") == "int8"          # choose() over the measurements
        assert fp.resolve(tmp_path / "none", "auto") == ("bf16" if native else "fp32")
    assert fp.resolve(tmp_path, "fp32") == "fp32"
