"""Dense retriever: bi-encoder, DPR loss (also across 2 gloo processes), sharded
encoding with resume, per-language FAISS against brute force, CLI, training."""
from __future__ import annotations

import json
import os
import random
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from retriever.dense.accuracy import format_accuracy_table, retriever_accuracy_table
from retriever.dense.data import (build_examples, hard_negatives_from_results, load_passages,
                                  positives_from_results)
from retriever.dense.encode import build_indexes, encode_shard, model_info, shard_dir, shard_share
from retriever.dense.gradcache import chunk_bounds
from retriever.dense.index import IndexParams, LanguageIndexes
from retriever.dense.loss import contrastive_loss, false_negative_mask
from retriever.dense.model import BiEncoder
from retriever.dense.task import RetrieverTask, TaskConfig, mini_index_metrics
from xqa.artifacts import is_complete
from xqa.cli import main as cli
from xqa.errors import InputError, XqaError
from xqa.records import Context, Hit, Passage, Question, RetrievalResult

# --------------------------------------------------------------------------- a toy world

TEMPLATES = {
    "en": ("{e} is a city in {c}. It has {n} inhabitants.", "In which country is {e}?"),
    "de": ("{e} ist eine Stadt in {c}. Sie hat {n} Einwohner.", "In welchem Land liegt {e}?"),
    "fr": ("{e} est une ville de {c}. Elle compte {n} habitants.", "Dans quel pays se trouve {e} ?"),
}


def _name(rng: random.Random) -> str:
    syl = ["ka", "lo", "mi", "ra", "tu", "ve", "zi", "no", "sa", "pe", "do", "ru", "xa", "bi"]
    return "".join(rng.choice(syl) for _ in range(rng.randint(2, 4))).capitalize()


def make_world(root: Path, n_entities: int = 120, q_per: int = 4, seed: int = 0) -> Path:
    """Passages about cities in three languages; questions in any language (often cross-lingual)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    countries = [_name(rng) for _ in range(12)]
    passages, questions = [], []
    for i in range(n_entities):
        e, c, plang = f"{_name(rng)}{i}", rng.choice(countries), rng.choice(sorted(TEMPLATES))
        passages.append({"id": f"p{i}", "title": e, "lang": plang,
                         "text": TEMPLATES[plang][0].format(e=e, c=c, n=rng.randint(1000, 99999))})
        for j in range(q_per):
            ql = rng.choice(sorted(TEMPLATES))
            questions.append({"id": f"q{i}_{j}", "question": TEMPLATES[ql][1].format(e=e), "answers": [c],
                              "lang": ql, "positive_ids": [f"p{i}"]})
    rng.shuffle(questions)
    n = len(questions)
    parts = {"passages": passages, "train": questions[: int(0.8 * n)], "dev": questions[int(0.8 * n):]}
    for name, rows in parts.items():
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> Path:
    return make_world(tmp_path_factory.mktemp("dense_world"))


@pytest.fixture(scope="session")
def tokenizer_dir(world, tmp_path_factory) -> Path:
    from xqa.tokenizer import train_tokenizer

    texts = [json.loads(line)["text"] for line in open(world / "passages.jsonl")]
    texts += [json.loads(line)["question"] for line in open(world / "train.jsonl")]
    return train_tokenizer(texts, tmp_path_factory.mktemp("dense_tok") / "tok", vocab_size=600)


@pytest.fixture(scope="session")
def passages(world) -> list[Passage]:
    from xqa.io import read_passages

    return list(read_passages(world / "passages.jsonl"))


@pytest.fixture(scope="session")
def model_dir(tokenizer_dir, tmp_path_factory) -> Path:
    model = BiEncoder.from_scratch(tokenizer_dir, "tiny", seed=0, query_max_length=24, passage_max_length=48)
    return model.save(tmp_path_factory.mktemp("dense_model") / "model")


@pytest.fixture(scope="session")
def model(model_dir) -> BiEncoder:
    return BiEncoder.load(model_dir)


# --------------------------------------------------------------------------- model


def test_a_luke_tower_with_entity_aware_attention_leaves_no_parameter_without_a_gradient(model):
    """Word inputs only: LUKE's entity embeddings and its entity-aware query projections get no
    gradient, and DDP stops at the second step on a trainable parameter that got none
    (``studio-ousia/luke-base`` has entity-aware attention on)."""
    from dataclasses import replace

    from transformers import LukeConfig, LukeModel

    tok = model.tokenizer
    cfg = LukeConfig(vocab_size=len(tok), entity_vocab_size=10, hidden_size=32, entity_emb_size=16,
                     num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     use_entity_aware_attention=True)
    luke = BiEncoder(LukeModel(cfg), None, tok, replace(model.config, backbone="luke"))
    ids = torch.randint(5, len(tok), (2, 8))
    mask = torch.ones_like(ids)
    (luke.embed_queries(ids, mask) @ luke.embed_passages(ids, mask).T).sum().backward()
    trainable = {n: p for n, p in luke.named_parameters() if p.requires_grad}
    assert trainable and [n for n, p in trainable.items() if p.grad is None] == []
    assert not any("e2w_query" in n or "entity_embeddings" in n for n in trainable)


def test_passage_layout_uses_cls_and_sep_control_symbols(model):
    tok = model.tokenizer
    cls_id, sep_id = tok.convert_tokens_to_ids(["<cls>", "<sep>"])
    batch = model.tokenize_passages([Passage("a", "Paris", "A city in France.", "en")])
    ids = batch["input_ids"][0].tolist()
    assert ids[0] == cls_id and ids.count(sep_id) == 1 and ids[-1] == tok.eos_token_id
    title = tok("Paris", add_special_tokens=False)["input_ids"]
    assert ids[1: 1 + len(title)] == title and ids[1 + len(title)] == sep_id
    q = model.tokenize_queries(["where is Paris?"] * 2 + ["x " * 200])
    assert q["input_ids"].shape[1] == model.config.query_max_length  # truncated
    assert q["input_ids"][0, 0] == cls_id and q["attention_mask"][0].sum() < q["input_ids"].shape[1]


def test_encode_is_order_independent_and_matches_embed(model, passages):
    ps = passages[:20]
    v = model.encode_passages(ps, batch_size=7)
    assert v.shape == (20, model.dim) and v.dtype == np.float32
    v_rev = model.encode_passages(ps[::-1], batch_size=3)
    np.testing.assert_allclose(v, v_rev[::-1], rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        b = model.tokenize_passages(ps[:1])
        direct = model.embed_passages(b["input_ids"], b["attention_mask"]).numpy()
    np.testing.assert_allclose(v[:1], direct, rtol=1e-4, atol=1e-5)
    assert model.encode_queries([]).shape == (0, model.dim)


def test_encoding_in_eval_mode_switches_no_modes_and_a_training_model_gets_its_mode_back(model, passages):
    """Encoding runs in eval mode; a model already there is not switched (each switch walks every
    submodule, milliseconds per question), one in training goes back to training after."""
    switches = []
    original = type(model).train

    def counting(self, mode=True):
        switches.append(mode)
        return original(self, mode)

    model.eval()
    try:
        type(model).train = counting
        model.encode_queries(["who?"])
        assert switches == []
        model.train()
        switches.clear()
        dropout_off = []
        hook = model.query_encoder.register_forward_pre_hook(lambda m, a: dropout_off.append(not m.training))
        model.encode_queries(["who?"])
        hook.remove()
        assert switches == [False, True] and dropout_off and all(dropout_off) and model.training
    finally:
        type(model).train = original
        model.eval()


@pytest.mark.parametrize("shared,pooling", [(False, "mean"), (True, "cls")])
def test_save_load_round_trip(tokenizer_dir, tmp_path, passages, shared, pooling):
    m = BiEncoder.from_scratch(tokenizer_dir, "tiny", shared=shared, pooling=pooling, seed=3,
                               passage_max_length=32)
    out = m.save(tmp_path / "m")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["kind"] == "bi_encoder" and cfg["shared"] is shared and cfg["pooling"] == pooling
    assert (out / "passage_encoder").is_dir() is (not shared)
    assert list((out / "query_encoder").glob("*.safetensors")) and not list(out.rglob("*.bin"))
    back = BiEncoder.load(out)
    np.testing.assert_allclose(m.encode_passages(passages[:5]), back.encode_passages(passages[:5]), atol=1e-6)
    np.testing.assert_allclose(m.encode_queries(["a b", "c"]), back.encode_queries(["a b", "c"]), atol=1e-6)
    if not shared:  # separate towers really differ
        assert not np.allclose(back.encode_queries(["a b"]), back.encode_passages([Passage("x", "", "a b", "en")]))


def _bert_folder(tmp_path: Path, words: list[str]) -> Path:
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(words))
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizer(str(tmp_path / "vocab.txt"))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    folder = tmp_path / "bert"
    BertModel(cfg).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


def test_bert_backbone_uses_its_own_cls_sep(tmp_path):
    folder = _bert_folder(tmp_path, ["paris", "is", "a", "city", "where"])
    m = BiEncoder.from_pretrained(str(folder), query_max_length=16, passage_max_length=16)
    assert m.config.backbone == "bert" and m.config.pooling == "cls"
    ids = m.tokenize_passages([Passage("1", "paris", "is a city", "en")])["input_ids"][0].tolist()
    tok = m.tokenizer
    assert ids == [tok.cls_token_id] + tok.convert_tokens_to_ids(["paris"]) + [tok.sep_token_id] + \
        tok.convert_tokens_to_ids(["is", "a", "city"]) + [tok.sep_token_id]
    v = m.encode_queries(["where is paris"])
    with torch.no_grad():
        b = m.tokenize_queries(["where is paris"])
        ref = m.query_encoder(**b).last_hidden_state[:, 0].numpy()  # first token, last layer
    np.testing.assert_allclose(v, ref, atol=1e-5)
    back = BiEncoder.load(m.save(tmp_path / "bi"))
    np.testing.assert_allclose(back.encode_queries(["where is paris"]), v, atol=1e-6)


def test_dpr_towers_use_pooler_output(tmp_path):
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    bert = _bert_folder(tmp_path, ["paris", "city"])
    cfg = DPRConfig(vocab_size=7, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(1)
    for cls, name in ((DPRQuestionEncoder, "q"), (DPRContextEncoder, "p")):
        cls(cfg).save_pretrained(str(tmp_path / name))
        for f in bert.glob("*"):
            if "token" in f.name or f.name == "vocab.txt":
                (tmp_path / name / f.name).write_bytes(f.read_bytes())
    m = BiEncoder.from_pretrained(str(tmp_path / "q"), str(tmp_path / "p"))
    assert not m.config.shared and m.config.pooling == "pooler"
    assert type(m.passage_encoder).__name__ == "DPRContextEncoder"
    ps = [Passage("1", "paris", "city", "en")]
    with torch.no_grad():
        b = m.tokenize_passages(ps)
        ref = m.passage_encoder(**b).pooler_output.numpy()
    np.testing.assert_allclose(m.encode_passages(ps), ref, atol=1e-5)
    back = BiEncoder.load(m.save(tmp_path / "bi"))
    assert type(back.query_encoder).__name__ == "DPRQuestionEncoder"
    np.testing.assert_allclose(back.encode_passages(ps), ref, atol=1e-5)


# --------------------------------------------------------------------------- loss


def test_contrastive_loss_equals_log_softmax_by_hand():
    g = torch.Generator().manual_seed(0)
    q, p = torch.randn(4, 8, generator=g), torch.randn(9, 8, generator=g)
    pos = torch.tensor([0, 3, 5, 8])
    s = (q @ p.T).numpy().astype(np.float64)
    ref = np.mean([np.log(np.exp(s[i]).sum()) - s[i, pos[i]] for i in range(4)])
    assert abs(float(contrastive_loss(q, p, pos)) - ref) < 1e-5
    exclude = torch.zeros(4, 9, dtype=torch.bool)
    exclude[0, 1] = exclude[2, 7] = True
    keep = [[j for j in range(9) if not exclude[i, j]] for i in range(4)]
    ref_m = np.mean([np.log(np.exp(s[i, keep[i]]).sum()) - s[i, pos[i]] for i in range(4)])
    assert abs(float(contrastive_loss(q, p, pos, exclude)) - ref_m) < 1e-5


def test_false_negative_mask_spares_the_target():
    positive = torch.tensor([0, 2])
    keys = torch.tensor([[10, 11], [12, 10]])  # q0: {10, 11}; q1: {12, 10}
    valid = torch.tensor([[True, True], [True, False]])  # q1's second key is padding
    p_keys = torch.tensor([10, 11, 12, 10])
    mask = false_negative_mask(positive, keys, valid, p_keys)
    assert mask.tolist() == [[False, True, False, True], [False, False, False, False]]


def test_mini_index_metrics_by_brute_force():
    rng = np.random.default_rng(0)
    qv, pv = rng.normal(size=(30, 6)), rng.normal(size=(50, 6))
    positives = [list(rng.choice(50, size=rng.integers(1, 3), replace=False)) for _ in range(30)]
    m = mini_index_metrics(qv, pv, positives)
    rr = []
    for i, pos in enumerate(positives):
        order = list(np.argsort(-(qv[i] @ pv.T)))
        rr.append(1.0 / (min(order.index(p) for p in pos) + 1))
    assert abs(m["mrr"] - np.mean(rr)) < 1e-9
    assert m["acc@1"] == np.mean([r == 1.0 for r in rr])


# --------------------------------------------------------------------------- 2 processes (gloo)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slice(batch: dict, rank: int, world: int) -> dict:
    b = batch["q_input_ids"].shape[0] // world
    m = batch["p_input_ids"].shape[0] // world
    out = {}
    for k, v in batch.items():
        if k.startswith("q_") or k in ("pos_keys", "pos_keys_valid"):
            out[k] = v[rank * b:(rank + 1) * b]
        elif k.startswith("p_"):
            out[k] = v[rank * m:(rank + 1) * m]
    out["positive"] = batch["positive"][rank * b:(rank + 1) * b] - rank * m
    return out


def _gloo_worker(rank: int, world: int, model_dir: str, batch_file: str, out_dir: str, port: int) -> None:
    import torch.distributed as dist
    from safetensors.torch import load_file, save_file
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model = BiEncoder.load(model_dir)
        model.eval()  # no dropout: the two runs must compute identical functions
        ddp = DistributedDataParallel(model)
        batch = _slice(load_file(batch_file), rank, world)
        for mask, chunk in ((True, 0), (False, 0), (True, 3)):  # chunk 3 of 4 local questions: uneven
            model.zero_grad()
            task = RetrieverTask(model, {}, config=TaskConfig(mask_false_negatives=mask, grad_cache_chunk=chunk))
            if chunk:
                loss = task.backward_step(ddp, batch)  # gradient cache through DDP
            else:
                loss = task.loss(ddp, batch)
                loss.backward()
            grads = {n: p.grad.contiguous() for n, p in model.named_parameters() if p.grad is not None}
            save_file({**grads, "__loss__": loss.detach().reshape(1)},
                      f"{out_dir}/mask{mask}-gc{chunk}-rank{rank}.safetensors")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_process_gloo_step_equals_one_process_full_batch(model_dir, passages, tmp_path):
    """Gathered negatives: the loss and the DDP-averaged gradients of 2 processes
    holding half a batch each equal one process over the whole batch — also
    with the gradient cache (chunks of 3 questions) under DDP."""
    import torch.multiprocessing as mp
    from safetensors.torch import load_file, save_file

    model = BiEncoder.load(model_dir)
    pmap = {p.id: p for p in passages}
    ids = [p.id for p in passages]
    # 8 questions; q0 (rank 0) and q6 (rank 1) share positive ids[0]: a cross-process false negative.
    examples = [{"id": f"q{i}", "question": f"question {i} about {passages[i].title}",
                 "positive_ids": [ids[i]], "hard_negative_ids": [ids[20 + i]]} for i in range(8)]
    examples[6]["positive_ids"] = [ids[0], ids[6]]
    examples[0]["positive_ids"] = [ids[0], ids[6]]
    task_m = RetrieverTask(model, pmap, config=TaskConfig(hard_negatives=1))
    random.seed(5)
    batch = task_m.collate(examples)
    batch_file = str(tmp_path / "batch.safetensors")
    save_file({k: v.contiguous() for k, v in batch.items()}, batch_file)
    mp.spawn(_gloo_worker, args=(2, str(model_dir), batch_file, str(tmp_path), _free_port()), nprocs=2)

    losses = {}
    for mask in (True, False):
        model.eval()
        model.zero_grad()
        task = RetrieverTask(model, pmap, config=TaskConfig(mask_false_negatives=mask))
        loss = task.loss(model, batch)
        loss.backward()
        ref = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        for rank, chunk in ((0, 0), (1, 0)) + (((0, 3), (1, 3)) if mask else ()):
            r = load_file(str(tmp_path / f"mask{mask}-gc{chunk}-rank{rank}.safetensors"))
            assert torch.allclose(r["__loss__"], loss.detach().reshape(1), atol=1e-5), (r["__loss__"], loss)
            assert set(r) - {"__loss__"} == set(ref)
            for n, g in ref.items():
                assert torch.allclose(r[n], g, rtol=1e-4, atol=1e-6), (chunk, n)
        losses[mask] = float(loss.detach())
    assert abs(losses[True] - losses[False]) > 1e-4  # the shared positive was masked out


# --------------------------------------------------------------------------- gradient cache


def _gc_examples(passages: list[Passage], n: int = 6) -> list[dict]:
    ids = [p.id for p in passages]
    ex = [{"id": f"q{i}", "question": f"question {i} about {passages[i].title}",
           "positive_ids": [ids[i]], "hard_negative_ids": [ids[30 + i]]} for i in range(n)]
    ex[0]["positive_ids"] = ex[4]["positive_ids"] = [ids[0], ids[4]]  # a false negative across chunks
    return ex


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _assert_same_grads(got: dict, want: dict) -> None:
    """Equal up to float32 summation order: rtol 1e-4, atol 1e-5 of the largest gradient entry.

    (Some gradients are zero in exact arithmetic — a passage tower's last bias
    shifts every score of a question alike — and only rounding noise in float.)
    """
    assert set(got) == set(want) and want
    atol = 1e-5 * max(float(g.abs().max()) for g in want.values())
    for n, g in want.items():
        assert torch.allclose(got[n], g, rtol=1e-4, atol=atol), (n, float((got[n] - g).abs().max()), atol)


def test_chunk_bounds_cover_the_batch_question_by_question():
    bounds = chunk_bounds(5, 15, 2)
    assert [(q.start, q.stop, p.start, p.stop) for q, p in bounds] == [(0, 2, 0, 6), (2, 4, 6, 12),
                                                                        (4, 5, 12, 15)]
    with pytest.raises(ValueError):
        chunk_bounds(4, 10, 2)  # passages not evenly laid out per question
    with pytest.raises(ValueError):
        chunk_bounds(4, 8, 0)


@pytest.mark.parametrize("shared,chunk", [(True, 2), (False, 4)])
def test_grad_cache_gradients_equal_full_batch_with_dropout(tokenizer_dir, passages, shared, chunk):
    """Gradient cache (6 questions, 12 passages, chunks of ``chunk`` questions) vs
    the plain loss: every parameter gradient, with dropout on (so the saved and
    restored RNG state is what makes them equal) and off (the exact full-batch
    forward), for shared and separate towers, in-batch + hard negatives and a
    masked false negative."""
    torch.set_num_threads(1)
    model = BiEncoder.from_scratch(tokenizer_dir, "tiny", shared=shared, pooling="mean", dropout=0.2, seed=1,
                                   query_max_length=16, passage_max_length=32)
    pmap = {p.id: p for p in passages}
    task = RetrieverTask(model, pmap, config=TaskConfig(hard_negatives=1, grad_cache_chunk=chunk))
    random.seed(2)
    batch = task.collate(_gc_examples(passages))
    assert batch["q_input_ids"].shape[0] == 6 and batch["p_input_ids"].shape[0] == 12

    def reference(seed: int) -> tuple[float, dict, torch.Tensor]:
        """The plain loss over the whole batch, the towers run chunk by chunk (as the dropout
        masks of the gradient cache are drawn), one backward through everything."""
        model.zero_grad()
        torch.manual_seed(seed)
        qs, ps = [], []
        for q_sl, p_sl in chunk_bounds(6, 12, chunk):
            q, p = model(batch["q_input_ids"][q_sl], batch["q_attention_mask"][q_sl],
                         batch["p_input_ids"][p_sl], batch["p_attention_mask"][p_sl])
            qs.append(q)
            ps.append(p)
        scaled, value = task.loss_from_vectors(torch.cat(qs), torch.cat(ps), batch)
        scaled.backward()
        return float(value), _grads(model), torch.get_rng_state()

    model.train()
    ref_loss, ref, ref_rng = reference(seed=7)
    model.zero_grad()
    torch.manual_seed(7)
    loss = task.backward_step(model, batch)
    assert abs(float(loss) - ref_loss) < 1e-5
    _assert_same_grads(_grads(model), ref)
    assert torch.equal(torch.get_rng_state(), ref_rng)  # the generator advanced as one pass over the chunks
    # dropout really matters here: other masks give other gradients
    _, other, _ = reference(seed=8)
    assert any(not torch.allclose(other[n], ref[n], rtol=1e-4, atol=1e-6) for n in ref)

    model.eval()  # no dropout: the plain full-batch forward, the loop's scale, accumulation over calls
    model.zero_grad()
    full = task.loss(model, batch)
    full.backward()
    want = _grads(model)
    model.zero_grad()
    halves = [task.backward_step(model, batch, scale=0.5) for _ in range(2)]
    assert all(abs(float(h) - float(full.detach())) < 1e-5 for h in halves)
    _assert_same_grads(_grads(model), want)


def test_cli_grad_cache_trains_like_the_whole_batch(world, tokenizer_dir, tmp_path, monkeypatch, capsys):
    """``--grad-cache-chunk`` goes through the loop's hook, and (no dropout) one step
    moves the weights as the plain whole-batch step does."""
    import retriever.dense.task as task_module

    torch.set_num_threads(1)
    calls = []
    real = task_module.grad_cache_backward

    def counting(*a, **k):
        calls.append(a[2])
        return real(*a, **k)

    monkeypatch.setattr(task_module, "grad_cache_backward", counting)
    base = ["train", "retriever", "--train", str(world / "train.jsonl"), "--passages", str(world / "passages.jsonl"),
            "--config", "tiny", "--tokenizer", str(tokenizer_dir), "--max-steps", "2", "--batch-size", "8",
            "--num-hard-negatives", "1", "--grad-accum", "2", "--warmup-steps", "0", "--lr", "1e-3",
            "--query-max-length", "16", "--passage-max-length", "32", "--quiet", "--seed", "0"]
    assert cli(base + ["--out", str(tmp_path / "gc"), "--grad-cache-chunk", "3"]) == 0
    assert calls == [3] * 4  # 2 steps x 2 accumulated batches
    assert cli(base + ["--out", str(tmp_path / "plain")]) == 0
    assert len(calls) == 4
    loss = {r: [json.loads(x)["loss"] for x in (tmp_path / r / "metrics.jsonl").read_text().splitlines()
                if '"loss"' in x] for r in ("gc", "plain")}
    assert loss["gc"] and np.allclose(loss["gc"], loss["plain"], rtol=1e-5), loss
    from retriever.dense.model import tower_state

    a = tower_state(tmp_path / "gc" / "best" / "query_encoder")
    b = tower_state(tmp_path / "plain" / "best" / "query_encoder")
    init = BiEncoder.from_scratch(tokenizer_dir, "tiny", seed=0, pooling="mean", dropout=0.0,
                                  query_max_length=16, passage_max_length=32).query_encoder.state_dict()
    # Both runs moved the weights alike. Compared as whole updates: AdamW's first steps are
    # ~lr·sign(g), so a gradient that is rounding noise in both runs may flip one entry.
    da = torch.cat([(a[k] - init[k]).flatten() for k in a])
    db = torch.cat([(b[k] - init[k]).flatten() for k in a])
    assert float(db.norm()) > 0.1  # training changed the weights
    assert float((da - db).norm()) < 1e-3 * float(db.norm()), float((da - db).norm() / db.norm())

    capsys.readouterr()
    with pytest.raises(SystemExit) as usage:   # refused by the parser, before anything loads
        cli(base + ["--out", str(tmp_path / "bad"), "--grad-cache-chunk", "-2"])
    assert usage.value.code == 2
    assert "argument --grad-cache-chunk: must be at least 0, got -2" in capsys.readouterr().err


# --------------------------------------------------------------------------- FAISS


def _groups(rng, sizes: dict[str, int], d: int = 16):
    return {lang: (rng.normal(size=(n, d)).astype(np.float32), [f"{lang}-{i}" for i in range(n)])
            for lang, n in sizes.items()}


def _brute(groups, q, k):
    vecs = np.concatenate([v for v, _ in groups.values()])
    ids = [i for _, ids in groups.values() for i in ids]
    s = q @ vecs.T
    return [[(ids[j], float(s[r, j])) for j in np.argsort(-s[r], kind="stable")[:k]] for r in range(len(q))]


def test_flat_search_equals_numpy_brute_force(tmp_path):
    rng = np.random.default_rng(0)
    groups = _groups(rng, {"en": 300, "de": 7, "ja": 120})
    q = rng.normal(size=(25, 16)).astype(np.float32)
    idx = LanguageIndexes.build(groups, IndexParams("flat"))
    idx.save(tmp_path / "idx")
    back = LanguageIndexes.load(tmp_path / "idx")
    for index in (idx, back):
        got = index.search(q, 10)
        want = _brute(groups, q, 10)
        for g, w in zip(got, want):
            assert [h.id for h in g] == [i for i, _ in w]
            np.testing.assert_allclose([h.score for h in g], [s for _, s in w], rtol=1e-5, atol=1e-5)
            assert all(h.lang == h.id.split("-")[0] and h.source == "dense" for h in g)
    assert [len(h) for h in back.search(q[:2], 1000)] == [427, 427]  # k larger than the index
    assert back.search(q[:0], 5) == []
    with pytest.raises(XqaError):
        back.search(q[:, :8], 5)


def test_fp16_flat_index_ranks_like_fp32():
    rng = np.random.default_rng(1)
    groups = _groups(rng, {"en": 500, "fi": 200})
    q = rng.normal(size=(20, 16)).astype(np.float32)
    got = LanguageIndexes.build(groups, IndexParams("flat", fp16=True)).search(q, 5)
    want = _brute(groups, q, 5)
    for g, w in zip(got, want):
        assert abs(g[0].score - w[0][1]) < 1e-2
        assert len({h.id for h in g} & {i for i, _ in w}) >= 4


@pytest.fixture
def one_faiss_thread():
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # OpenMP spinning on a busy 2-core machine costs minutes
    yield
    faiss.omp_set_num_threads(before)


@pytest.mark.parametrize("kind,min_recall", [("hnsw", 0.95), ("ivfpq", 0.5)])
def test_approximate_indexes_are_sane(kind, min_recall, tmp_path, one_faiss_thread):
    rng = np.random.default_rng(2)
    centers = rng.normal(size=(20, 32)) * 3
    groups = {}
    for lang, n in (("en", 800), ("ko", 300)):
        x = centers[rng.integers(0, 20, n)] + rng.normal(size=(n, 32))
        groups[lang] = (x.astype(np.float32), [f"{lang}-{i}" for i in range(n)])
    q = (centers[rng.integers(0, 20, 40)] + rng.normal(size=(40, 32))).astype(np.float32)
    idx = LanguageIndexes.build(groups, IndexParams(kind, nprobe=8, pq_bits=6))
    idx.save(tmp_path / kind)
    back = LanguageIndexes.load(tmp_path / kind)
    got, want = back.search(q, 10), _brute(groups, q, 10)
    recall = np.mean([len({h.id for h in g} & {i for i, _ in w}) / 10 for g, w in zip(got, want)])
    assert recall >= min_recall, recall
    for g in got:
        assert len(g) == 10 and len({h.id for h in g}) == 10
        assert all(a.score >= b.score for a, b in zip(g, g[1:]))


# --------------------------------------------------------------------------- shards, resume, CLI


class CountingEncoder:
    def __init__(self, model, fail_after: int | None = None):
        self.model, self.calls, self.encoded, self.fail_after = model, 0, 0, fail_after

    def __call__(self, ps):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        self.encoded += len(ps)
        return self.model.encode_passages(ps)


def test_a_shard_bar_counts_the_shards_passages_done_chunks_included(model, passages, tmp_path, capsys):
    n = len(passages)
    share = [shard_share(n, s, 2) for s in range(2)]
    assert sum(share) == n and share[0] - share[1] in (0, 1) and shard_share(1, 1, 2) == 0
    out = tmp_path / "idx"
    with pytest.raises(KeyboardInterrupt):   # a first chunk done, then killed
        encode_shard(CountingEncoder(model, fail_after=1), passages, out, 0, 2, chunk_size=10, progress=False)
    capsys.readouterr()
    encode_shard(model.encode_passages, passages, out, 0, 2, chunk_size=10, progress=True, total=share[0])
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    ends = [line for line in bar if line.startswith("shard 0/2") and f"{share[0]}/{share[0]}" in line]
    assert ends and "100%" in ends[-1]   # the total known up front, the resumed chunk counted


def test_killed_shard_resumes_without_recomputing_finished_chunks(model, passages, tmp_path):
    out = tmp_path / "idx"
    enc = CountingEncoder(model, fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        encode_shard(enc, passages, out, 0, 1, chunk_size=25, progress=False)
    folder = shard_dir(out, 0, 1)
    done = sorted(folder.glob("chunk-*.npy"))
    assert len(done) == 2 and not (folder / "done.json").exists()
    mtimes = {p: p.stat().st_mtime_ns for p in done}
    enc2 = CountingEncoder(model)
    stats = encode_shard(enc2, passages, out, 0, 1, chunk_size=25, progress=False)
    assert enc2.encoded == len(passages) - 50 and stats["skipped"] == 50
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())
    assert not list(folder.glob(".*tmp"))  # no temporary leftovers
    build_indexes(out, 1, IndexParams(), model_info(tmp_path, out), progress=False)
    full = model.encode_passages(passages)
    idx = LanguageIndexes.load(out / "index")
    q = model.encode_queries(["In which country is it?"])
    got = idx.search(q, 5)[0]
    s = (q @ full.T)[0]
    assert [h.id for h in got] == [passages[j].id for j in np.argsort(-s)[:5]]


def test_a_shard_being_encoded_by_another_process_is_refused_not_encoded_twice(model, passages, tmp_path):
    """A second process on the same shard would delete the first one's chunk being written: it
    stops at once; another shard of the same folder is encoded meanwhile."""
    import subprocess
    import sys

    from xqa.artifacts import lock_file

    out = tmp_path / "idx"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
         "print('locked', flush=True); sys.stdin.read()", str(lock_file(out, shard_dir(out, 0, 2).name))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(XqaError, match=r"shard 0 of .*idx is being encoded by another process; wait for it"):
            encode_shard(model.encode_passages, passages, out, 0, 2, progress=False)
        assert not list(shard_dir(out, 0, 2).glob("chunk-*"))
        assert encode_shard(model.encode_passages, passages, out, 1, 2, progress=False)["encoded"] > 0
    finally:
        holder.kill()
        holder.wait()
    assert encode_shard(model.encode_passages, passages, out, 0, 2, progress=False)["encoded"] > 0


def test_shards_that_finish_together_build_the_indexes_once(model_dir, world, tmp_path, capsys):
    """While one process builds the FAISS indexes (holding every vector in memory), another whose
    shard finished too says so and stops, rather than build them a second time."""
    import subprocess
    import sys

    from xqa.artifacts import lock_file

    out = tmp_path / "dense"
    common = ["index", "dense", "--model", str(model_dir), "--passages", str(world / "passages.jsonl"),
              "--out", str(out), "--num-shards", "2"]
    assert cli(common + ["--encode-only", "--quiet"]) == 0 and not (out / "config.json").exists()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
         "print('locked', flush=True); sys.stdin.read()", str(lock_file(out, "build"))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        capsys.readouterr()
        assert cli(common) == 0
        assert "another process is building the indexes of" in capsys.readouterr().out
        assert not (out / "config.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert cli(common + ["--quiet"]) == 0 and (out / "config.json").is_file()


def test_cli_shards_resume_and_retriever_matches_brute_force(model, model_dir, world, passages, tmp_path):
    out = tmp_path / "dense"
    common = ["index", "dense", "--model", str(model_dir), "--passages", str(world / "passages.jsonl"),
              "--out", str(out), "--num-shards", "2", "--quiet"]
    assert cli(common + ["--shard-id", "1"]) == 0
    s1 = shard_dir(out, 1, 2) / "chunk-000000.npy"
    t1 = s1.stat().st_mtime_ns
    assert not (out / "config.json").exists()  # shard 0 missing: no index yet
    assert cli(common) == 0  # encodes only shard 0, then builds
    assert s1.stat().st_mtime_ns == t1
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["kind"] == "dense_index" and cfg["passages"] == len(passages)
    assert sum(cfg["languages"].values()) == len(passages)

    from retriever.base import contract_violations
    from retriever.dense import DenseRetriever

    r = DenseRetriever.load(out)  # finds the model through the index's config
    qs = [Question(f"t{i}", f"In which country is {p.title}?", "en") for i, p in enumerate(passages[:6])]
    hits = r.search(qs, 7)
    qv, pv = model.encode_queries([q.question for q in qs]), model.encode_passages(passages)
    row_of = {p.id: j for j, p in enumerate(passages)}
    for row, hs in enumerate(hits):
        assert not contract_violations(hs, 7)
        s = qv[row] @ pv.T  # brute force; an untrained model has near-ties, so compare scores
        np.testing.assert_allclose([h.score for h in hs], np.sort(s)[::-1][:7], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose([h.score for h in hs], [s[row_of[h.id]] for h in hs], rtol=1e-4, atol=1e-4)
        assert all(h.lang == passages[row_of[h.id]].lang for h in hs)
    assert [h.id for h in r.search_vectors(qv, 7)[0]] == [h.id for h in hits[0]]
    assert r.search([], 5) == []
    # a finished index is left alone; --overwrite rebuilds another index type from the same shards
    assert cli(common) == 0
    assert cli(common + ["--overwrite", "--index", "hnsw"]) == 0
    assert json.loads((out / "config.json").read_text())["index"]["kind"] == "hnsw"
    assert s1.stat().st_mtime_ns == t1


def test_shards_of_other_inputs_are_refused_and_a_refused_rerun_keeps_the_finished_index(
        model, model_dir, tokenizer_dir, world, passages, tmp_path, capsys):
    """A shard records what encoded it: resuming or reusing it with another model, other passages
    or another --max-length is refused before anything is written (a finished index keeps its
    config.json), as is resuming with another chunk size or precision; the same inputs from a
    copy of the passage file are not."""
    import shutil

    out = tmp_path / "dense"
    common = ["index", "dense", "--passages", str(world / "passages.jsonl"), "--out", str(out), "--quiet"]
    assert cli(common + ["--model", str(model_dir)]) == 0
    config = (out / "config.json").read_text()
    other = BiEncoder.from_scratch(tokenizer_dir, "tiny", seed=1, passage_max_length=48).save(tmp_path / "other")
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("".join((world / "passages.jsonl").read_text().splitlines(keepends=True)[:20]))
    for extra, said in ((["--passages", str(fewer), "--overwrite"], "passages "),
                        (["--max-length", "16", "--overwrite"], "max_length the model's there, 16 now"),
                        (["--passages", str(fewer)], "passages "),
                        (["--model", str(other), "--overwrite"], "encoded by")):
        capsys.readouterr()
        assert cli(common + ["--model", str(model_dir)] + extra) == 1
        err = capsys.readouterr().err
        assert said in err and "remove" in err, err
        assert (out / "config.json").read_text() == config   # the finished index is left as it was
    copy = tmp_path / "copy.jsonl"
    shutil.copy(world / "passages.jsonl", copy)
    assert cli(["index", "dense", "--passages", str(copy), "--out", str(out), "--quiet", "--model", str(model_dir),
                "--overwrite", "--index", "hnsw"]) == 0
    assert json.loads((out / "config.json").read_text())["index"]["kind"] == "hnsw"
    # a shard begun in chunks of 25 resumes only in chunks of 25, and in the precision it began in
    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        encode_shard(CountingEncoder(model, fail_after=1), passages, part, 0, 1, chunk_size=25, progress=False,
                     made_by={"precision": "cpu fp32"})
    for kw, said in (({"chunk_size": 30, "made_by": {"precision": "cpu fp32"}}, "chunk_size 25 there, 30 now"),
                     ({"chunk_size": 25, "made_by": {"precision": "cpu int8"}}, "precision cpu fp32 there, cpu int8")):
        with pytest.raises(XqaError, match=said):
            encode_shard(model.encode_passages, passages, part, 0, 1, progress=False, **kw)
    stats = encode_shard(model.encode_passages, passages, part, 0, 1, chunk_size=25, progress=False,
                         made_by={"precision": "cpu fp32"})
    assert stats["skipped"] == 25 and stats["encoded"] == len(passages) - 25
    # intermediate vectors (stale="redo") are encoded again instead
    said = []
    stats = encode_shard(model.encode_passages, passages[:10], part, 0, 1, chunk_size=25, progress=False,
                         made_by={"precision": "cpu int8"}, stale="redo", log=said.append)
    assert stats["encoded"] == 10 and "encoding them again" in said[0]


def test_a_build_moved_with_its_encoder_resumes_where_it_stopped(model_dir, world, tmp_path):
    """Shards record their encoder by its weights, not by where it lies: a build folder holding
    both, moved mid-encoding, finishes the index without encoding anything again; another
    encoder's shards are still refused."""
    import shutil

    first, moved = tmp_path / "first", tmp_path / "moved"
    shutil.copytree(model_dir, first / "encoder")
    args = ["index", "dense", "--passages", str(world / "passages.jsonl"), "--quiet", "--num-shards", "2"]
    assert cli(args + ["--model", str(first / "encoder"), "--out", str(first / "dense"), "--shard-id", "0"]) == 0
    made_by = (shard_dir(first / "dense", 0, 2) / "made_by.json").read_text()
    assert str(first) not in made_by
    first.rename(moved)
    chunk = next(shard_dir(moved / "dense", 0, 2).glob("chunk-*.npy"))
    stamp = chunk.stat().st_mtime_ns
    assert cli(args + ["--model", str(moved / "encoder"), "--out", str(moved / "dense")]) == 0
    assert is_complete(moved / "dense") and chunk.stat().st_mtime_ns == stamp
    assert (shard_dir(moved / "dense", 1, 2) / "made_by.json").read_text() == made_by
    (moved / "dense" / "config.json").unlink()
    shutil.rmtree(shard_dir(moved / "dense", 1, 2))
    weights = next((moved / "encoder").rglob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + bytes(8))    # other weights in the same place
    assert cli(args + ["--model", str(moved / "encoder"), "--out", str(moved / "dense")]) == 1


def test_another_artifacts_folder_is_neither_indexed_into_nor_trained_over(model_dir, world, tmp_path, capsys):
    """--out holding another artifact: index dense said "a finished dense index; nothing to do" of
    a training run, and a training wrote its config.json over a dense index's."""
    from xqa.artifacts import save_config
    from xqa.training.loop import TrainConfig, train

    run = tmp_path / "run"
    save_config(run, "training_run", {})
    args = ["index", "dense", "--model", str(model_dir), "--passages", str(world / "passages.jsonl"), "--quiet"]
    assert cli([*args, "--out", str(run)]) == 1
    assert f"{run} holds a training_run (its config.json), not a dense index" in capsys.readouterr().err
    index = tmp_path / "index"
    assert cli([*args, "--out", str(index)]) == 0
    before = (index / "config.json").read_text()
    with pytest.raises(XqaError, match="holds a dense_index .*, not a training run: train into another --out"):
        train(None, [], TrainConfig(out_dir=str(index)), progress=False)
    assert (index / "config.json").read_text() == before


def test_a_bad_passage_record_leaves_nothing_that_refuses_the_fixed_file(model_dir, world, tmp_path, capsys):
    """Stopped by a bad record before its first vectors, a shard's made_by.json names the bad
    file; the same command over the fixed file encodes, not "vectors encoded otherwise"."""
    lines = (world / "passages.jsonl").read_text().splitlines(keepends=True)
    passages = tmp_path / "passages.jsonl"
    passages.write_text("".join(lines[:3]) + '{"id": "bad", "title": "", "text": 5, "lang": "en"}\n'
                        + "".join(lines[3:]))
    args = ["index", "dense", "--model", str(model_dir), "--passages", str(passages), "--quiet",
            "--out", str(tmp_path / "index")]
    assert cli(args) == 1
    assert "passages.jsonl:4: field 'text' should be a string" in capsys.readouterr().err
    passages.write_text("".join(lines))
    assert cli(args) == 0 and is_complete(tmp_path / "index")


def test_cli_errors_name_the_problem(world, model_dir, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "title": "t", "text": "x", "lang": "en"}\n{"id": "2", "title": \n')
    assert cli(["index", "dense", "--model", str(model_dir), "--passages", str(bad), "--out",
                str(tmp_path / "o"), "--quiet"]) == 1
    assert f"{bad}:2" in capsys.readouterr().err
    assert cli(["index", "dense", "--model", str(tmp_path / "nope"), "--passages", str(world / "passages.jsonl"),
                "--out", str(tmp_path / "o2"), "--quiet"]) == 1
    assert f"--model {tmp_path / 'nope'}: no such folder" in capsys.readouterr().err
    # what is not an encoder, or no passage file, is said before --out is written: a rerun with
    # the right model is not refused for "shards encoded by" the wrong one
    for model, passages, said in ((world, world / "passages.jsonl", "not an xqa artifact folder (no config.json)"),
                                  (model_dir, tmp_path / "none.jsonl", "none.jsonl: no such passage file")):
        assert cli(["index", "dense", "--model", str(model), "--passages", str(passages),
                    "--out", str(tmp_path / "o2"), "--quiet"]) == 1
        assert said in capsys.readouterr().err and not (tmp_path / "o2").exists()
    assert cli(["train", "retriever", "--train", str(world / "passages.jsonl"), "--passages",
                str(world / "passages.jsonl"), "--out", str(tmp_path / "t"), "--config", "tiny"]) == 1


def test_settings_no_run_can_use_are_errors_not_traces(world, model_dir, tokenizer_dir, tmp_path, capsys):
    """A device this machine lacks, a precision the model has no runtime for, more IVF lists than
    vectors, no training step, a dropout above 1: each a one-line error, --out left unwritten."""
    from retriever.dense.index import build_index
    from retriever.dense.model import check_device

    index = ["index", "dense", "--model", str(model_dir), "--passages", str(world / "passages.jsonl"),
             "--out", str(tmp_path / "o"), "--quiet"]
    if not torch.cuda.is_available():
        for extra, said in ((["--device", "cuda"], "device cuda: torch sees no CUDA device on this machine"),
                            (["--precision", "int8"], "precision int8 needs the int8 runtime")):
            assert cli(index + extra) == 1
            assert said in capsys.readouterr().err and not (tmp_path / "o").exists()
    with pytest.raises(XqaError, match="unknown device 'gpu0'"):
        check_device("gpu0")
    with pytest.raises(XqaError, match="--nlist 20 lists need at least 20 vectors to train on, .* has 10"):
        build_index(np.random.default_rng(0).standard_normal((10, 8)).astype(np.float32),
                    IndexParams(kind="ivfpq", nlist=20))
    train = ["train", "retriever", "--train", str(world / "train.jsonl"), "--passages",
             str(world / "passages.jsonl"), "--tokenizer", str(tokenizer_dir), "--size", "tiny"]
    assert cli(train + ["--out", str(tmp_path / "t"), "--epochs", "0"]) == 1
    assert "--epochs 0 trains no step: give a number of passes above 0, or --max-steps" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(train + ["--out", str(tmp_path / "t2"), "--dropout", "1.5"])
    assert "argument --dropout: must be at most 1.0, got 1.5" in capsys.readouterr().err


def test_quiet_training_and_spar_commands_draw_no_model_bars_and_say_no_empty_best(tmp_path, monkeypatch, capsys):
    """--quiet reaches transformers' "Loading weights" / "Writing model shards" bars in train
    retriever, train lexical, train bm25-aug and index spar; a run without a dev set says its step
    and no "best mrr None"."""
    import xqa.indexes
    from transformers.utils import logging as hf_logging
    from xqa.training import bm25_aug, dense, lexical

    seen = []

    def fake(config):
        seen.append(hf_logging.is_progress_bar_enabled())
        return {"step": 3, "best": None}

    for module in (dense, lexical, bm25_aug):
        monkeypatch.setattr(module, "train", fake)
    monkeypatch.setattr(xqa.indexes, "build_spar", lambda config: seen.append(
        hf_logging.is_progress_bar_enabled()) or {})
    monkeypatch.setattr(xqa.indexes, "describe_spar", lambda index, out: "spar")
    common = ["--passages", "p.jsonl", "--out", str(tmp_path / "o")]
    commands = (["train", "retriever", "--train", "t.jsonl", "--size", "tiny", "--tokenizer", "tok"],
                ["train", "lexical", "--bm25", "b", "--size", "tiny", "--tokenizer", "tok"],
                ["train", "bm25-aug", "--train", "t.jsonl", "--init", "e"],
                ["index", "spar", "--dense", "d", "--lexical", "l"])
    for command in commands:
        assert cli(command + common + ["--quiet"]) == 0 and cli(command + common) == 0, command
    assert seen == [False, True] * len(commands) and hf_logging.is_progress_bar_enabled()
    out = capsys.readouterr().out
    assert "(step 3)" in out and "None" not in out


def test_quiet_index_dense_draws_no_model_loading_bar(tmp_path, monkeypatch):
    """--quiet: no bar of any kind, transformers' "Loading weights" of the encoder included."""
    import xqa.indexes
    from transformers.utils import logging as hf_logging

    seen = []
    monkeypatch.setattr(xqa.indexes, "build_dense", lambda config, log: seen.append(
        hf_logging.is_progress_bar_enabled()))
    args = ["index", "dense", "--model", "m", "--passages", "p.jsonl", "--out", str(tmp_path / "o")]
    assert cli(args + ["--quiet"]) == 0 and cli(args) == 0
    assert seen == [False, True] and hf_logging.is_progress_bar_enabled()


# --------------------------------------------------------------------------- data


def test_examples_positives_and_hard_negatives_from_results():
    def ctx(i, has=None):
        return Context(i, "", "", "en", 1.0, "sparse", has)

    q1 = Question("a", "q1?", "en", meta={"positive_ids": ["p1"]})
    q2 = Question("b", "q2?", "en")
    res = [RetrievalResult(q1, (ctx("p9"), ctx("p1"), ctx("p8", True), ctx("p7"))),
           RetrievalResult(q2, (ctx("p5", True), ctx("p6", False), ctx("p4")))]
    pos = positives_from_results(res)
    assert pos == {"a": ["p8"], "b": ["p5"]}
    hard = hard_negatives_from_results(res, {"a": ["p1"]}, n=2)
    assert hard == {"a": ["p9", "p7"], "b": ["p6", "p4"]}
    ex, skipped = build_examples([q1, q2, Question("c", "q3", "en")], hard_negatives=hard)
    assert skipped == 2 and ex[0]["positive_ids"] == ["p1"] and ex[0]["hard_negative_ids"] == ["p9", "p7"]
    ex, skipped = build_examples([q1, q2], positives=pos, hard_negatives=hard)
    assert [e["positive_ids"] for e in ex] == [["p8"], ["p5"]] and skipped == 0
    with pytest.raises(XqaError):
        load_passages([Passage("p1", "", "x", "en")], keep={"p1", "p2"})


def test_collate_shapes_and_targets(model, passages):
    pmap = {p.id: p for p in passages}
    task = RetrieverTask(model, pmap, config=TaskConfig(hard_negatives=2))
    ex = [{"question": "q a", "positive_ids": [passages[0].id], "hard_negative_ids": [passages[1].id]},
          {"question": "q b", "positive_ids": [passages[2].id, passages[3].id], "hard_negative_ids": []}]
    random.seed(0)
    b = task.collate(ex)
    assert b["q_input_ids"].shape[0] == 2 and b["p_input_ids"].shape[0] == 6
    assert b["positive"].tolist() == [0, 3]
    from retriever.dense.data import id_key

    assert b["p_keys"][0] == id_key(passages[0].id) and b["p_keys"][1] == id_key(passages[1].id)
    assert b["p_keys"][3] in (id_key(passages[2].id), id_key(passages[3].id))
    assert b["pos_keys_valid"].sum(1).tolist() == [1, 2]


def test_arrow_examples_collate_like_lists(model, passages, tmp_path):
    from retriever.dense.data import to_dataset

    ex = [{"id": f"q{i}", "question": f"q {i}", "lang": "en", "positive_ids": [passages[i].id],
           "hard_negative_ids": [passages[i + 1].id] if i % 2 else []} for i in range(6)]
    ds = to_dataset(ex, cache_dir=str(tmp_path))  # Arrow, memory-mapped
    assert len(ds) == 6 and ds[3] == ex[3]
    task = RetrieverTask(model, {p.id: p for p in passages}, config=TaskConfig(hard_negatives=1))
    random.seed(1)
    a = task.collate(ex)
    random.seed(1)
    b = task.collate([ds[i] for i in range(6)])
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_accuracy_table_splits_same_and_cross_lingual():
    qs = [Question("1", "a", "en", meta={"positive_ids": ["x"], "crosslingual": False}),
          Question("2", "b", "en", meta={"positive_ids": ["y"], "crosslingual": True}),
          Question("3", "c", "de", meta={"positive_ids": ["z"]}),
          Question("4", "d", "de")]  # no gold ids: skipped
    hits = [[Hit("x", 1.0)], [Hit("q", 2.0), Hit("y", 1.0)], [Hit("z", 1.0)], [Hit("z", 1.0)]]
    rows = retriever_accuracy_table(qs, hits, ks=(1, 2), passage_lang={"z": "en"})
    by = {(r["lang"], r["split"]): r for r in rows}
    assert by[("en", "same")]["acc@1"] == 1.0 and by[("en", "cross")]["acc@1"] == 0.0
    assert by[("en", "cross")]["acc@2"] == 1.0 and by[("de", "cross")]["n"] == 1
    assert by[("en", "all")]["acc@1"] == 0.5 and by[("ALL", "all")]["acc@1"] == 0.75
    assert "| en |" in format_accuracy_table(rows, ks=(1, 2))


# --------------------------------------------------------------------------- training


def test_training_improves_dev_mrr_and_resumes_as_done(world, tokenizer_dir, tmp_path):
    torch.set_num_threads(1)
    from retriever.dense.data import needed_ids
    from xqa.io import read_passages, read_questions

    dev, _ = build_examples(read_questions(world / "dev.jsonl"))
    pmap = load_passages(read_passages(world / "passages.jsonl"), needed_ids(dev), extra=1000)
    from xqa.training.dense import SCRATCH_POOLING

    untrained = BiEncoder.from_scratch(tokenizer_dir, "tiny", seed=0, pooling=SCRATCH_POOLING,
                                       query_max_length=24, passage_max_length=48)
    before = RetrieverTask(untrained, pmap, dev).evaluate(untrained)
    out = tmp_path / "run"
    args = ["train", "retriever", "--train", str(world / "train.jsonl"), "--dev", str(world / "dev.jsonl"),
            "--passages", str(world / "passages.jsonl"), "--config", "tiny", "--tokenizer", str(tokenizer_dir),
            "--out", str(out), "--max-steps", "60", "--batch-size", "16", "--eval-every", "60",
            "--query-max-length", "24", "--passage-max-length", "48", "--quiet", "--seed", "0"]
    assert cli(args) == 0
    evals = [json.loads(line)["eval"] for line in open(out / "metrics.jsonl") if '"eval"' in line]
    assert evals[-1]["mrr"] > before["mrr"] + 0.15, (before, evals)
    trained = BiEncoder.load(out)  # the run folder resolves to OUT/best
    assert trained.config.passage_max_length == 48
    again = BiEncoder.from_pretrained(str(out))  # --init from an xqa run continues from its best model
    np.testing.assert_allclose(again.encode_queries(["x y"]), trained.encode_queries(["x y"]), atol=1e-6)
    assert cli(args) == 0  # finished: nothing to do


def test_a_bi_encoder_saved_in_shards_packs_and_unpacks_over_its_encoder(converted_e5, tmp_path):
    """Λ's towers are saved in shards (word embeddings apart): packing reads every shard, and
    the unpacked tower holds the frozen embeddings exactly and the trained layers to int8 steps."""
    from retriever.dense import delta as dense_delta
    from retriever.dense.model import BiEncoder, tower_state

    model = BiEncoder.from_pretrained(str(converted_e5), layers=2)
    torch.manual_seed(0)
    with torch.no_grad():
        model.query_encoder.encoder.layer[1].attention.self.query.weight.add_(0.05 * torch.randn(384, 384))
    saved = model.save(tmp_path / "lambda")
    assert (saved / "query_encoder" / "model.safetensors.index.json").is_file()
    state = tower_state(saved / "query_encoder")
    back = tower_state(dense_delta.unpack(dense_delta.pack(saved, converted_e5, tmp_path / "packed"), converted_e5,
                                          tmp_path / "back") / "query_encoder")
    assert sorted(back) == sorted(state)
    assert torch.equal(back["embeddings.word_embeddings.weight"], state["embeddings.word_embeddings.weight"])
    name = "encoder.layer.1.attention.self.query.weight"
    assert (back[name] - state[name]).abs().max() < 2e-3
