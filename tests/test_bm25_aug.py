"""BM25 over pieces and its learned query augmentation (Chen & Wiseman 2023, "BM25 Query
Augmentation Learned End-to-End"): Lucene computes exactly the training formula, the loss
learns, a saved model reloads, and both retrievers meet the contract."""
from __future__ import annotations

import random

import numpy as np
import pytest

from retriever.base import contract_violations
from xqa.records import Passage, Question

DOCS = [
    ("p1", "", "Paris is the capital of France", "en"),
    ("p2", "", "Berlin is the capital of Germany and Berlin is big", "de"),
    ("p3", "Tokyo", "Tokyo ist die Hauptstadt von Japan", "de"),
    ("p4", "", "Le fleuve Rhin traverse Bâle et Strasbourg", "fr"),
    ("p5", "", "東京は日本の首都です", "ja"),
    ("p6", "", "Jakarta adalah ibu kota Indonesia", "id"),
]
# one longer passage (> 24 pieces): Lucene stores its length with 4 significant bits
LONG = ("p7", "", "Tokyo " * 3 + "Osaka is a large city in Japan with many people, rivers, bridges, "
        "temples, markets and a famous castle built long ago by a powerful lord", "en")

# Anserini's SimpleSearcher reports scores rounded to 4 decimal places
ATOL = 5.1e-5


def _passages(long: bool = True) -> list[Passage]:
    return [Passage(*d) for d in DOCS + ([LONG] if long else [])]


@pytest.fixture(scope="module")
def pieces_index(converted_e5, tmp_path_factory):
    from retriever.bm25_aug.pieces import PiecesRetriever, build_pieces_index

    out = tmp_path_factory.mktemp("pieces") / "idx"
    cfg = build_pieces_index(_passages(), converted_e5, out, progress=False)
    assert cfg["passages"] == len(DOCS) + 1 and cfg["languages"]["de"] == 2
    retriever = PiecesRetriever.load(out)
    yield retriever
    retriever.close()


def _stats(retriever):
    from retriever.bm25_aug.pieces import CollectionStats, piece_ids

    docs = piece_ids(retriever.tokenizer, [p.contents() for p in _passages()])
    assert max(len(d) for d in docs) > 24 and min(len(d) for d in docs) < 20
    return CollectionStats(docs, len(retriever.tokenizer))


def _dense(tokenizer, weights: dict[str, float]) -> np.ndarray:
    v = np.zeros(len(tokenizer), np.float32)
    for piece, w in weights.items():
        v[tokenizer.convert_tokens_to_ids(piece)] = w
    return v


def _check(hits, formula: np.ndarray, ids: list[str]) -> None:
    expected = {pid: s for pid, s in zip(ids, formula) if s > 0}
    assert {h.id for h in hits} == set(expected)
    for h in hits:
        assert h.score == pytest.approx(expected[h.id], rel=1e-4, abs=ATOL), h.id


def test_lucene_length_rounding():
    from retriever.bm25_aug.pieces import lucene_length

    assert [lucene_length(n) for n in range(24)] == list(range(24))
    assert lucene_length(41) == 40 and lucene_length(1000) <= 1000


def test_weighted_query_scores_exactly_as_formula(pieces_index):
    """(w ⊙ v ⊙ (bow + a))ᵀ f(d) in numpy = Lucene's BM25 of the boosted query."""
    r = pieces_index
    stats = _stats(r)
    ids = [p.id for p in _passages()]
    rng = np.random.default_rng(0)
    questions = ["capital of Tokyo Berlin", "Hauptstadt Japan", "東京 首都", "Osaka castle Tokyo"]
    for text, bow in zip(questions, r.query_pieces(questions)):
        w = {p: float(rng.uniform(0.3, 2.0)) for p in bow}
        aug = {"▁Japan": 0.7, "▁Paris": 1.3, "▁Rhin": 0.25}
        weights = {p: w.get(p, 1.0) * (bow.get(p, 0.0) + aug.get(p, 0.0)) for p in set(bow) | set(aug)}
        hits = r.search_weighted([weights], 10)[0]
        formula = stats.bm25(_dense(r.tokenizer, weights))[0]
        _check(hits, formula, ids)
        assert not contract_violations(hits, 10)


def test_plain_pieces_search_is_formula_with_no_augmentation(pieces_index):
    r = pieces_index
    stats = _stats(r)
    ids = [p.id for p in _passages()]
    qs = [Question("q1", "capital of Germany", "en"), Question("q2", "Tokyo Japan", "de"),
          Question("q3", "東京", "ja"), Question("q4", "", "en")]
    found = r.search(qs, 10)
    for q, hits, bow in zip(qs, found, r.query_pieces([q.question for q in qs])):
        _check(hits, stats.bm25(_dense(r.tokenizer, bow))[0] if bow else np.zeros(len(ids)), ids)
        assert all(h.source == "pieces" for h in hits)
    assert found[3] == []
    assert found[0][0].id == "p2" and found[0][0].lang == "de"
    assert found[2][0].id == "p5" and found[2][0].lang == "ja"


def test_pieces_contract(pieces_index):
    qs = [Question(f"q{i}", t, "en") for i, t in enumerate(["capital", "Tokyo Osaka", "is the of", "x"])]
    for k in (0, 1, 3, 50):
        found = pieces_index.search(qs, k)
        assert len(found) == len(qs)
        for hits in found:
            assert not contract_violations(hits, k)
    with pytest.raises(ValueError):
        pieces_index.search(qs, -1)


def _tiny_base(converted_e5, folder):
    """A randomly initialised 2-layer BERT over multilingual-e5's tokenizer, saved as an encoder folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(str(converted_e5))
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, pad_token_id=1,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    BertModel(cfg, add_pooling_layer=False).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_base(converted_e5, tmp_path_factory):
    return _tiny_base(converted_e5, tmp_path_factory.mktemp("base") / "enc")


def _examples():
    qs = [("Which city is the capital of France?", "p1", ["p2", "p4"]),
          ("What is big in Germany?", "p2", ["p1", "p3"]),
          ("Was ist die Hauptstadt von Japan?", "p3", ["p5", "p2"]),
          ("Welcher Fluss fließt durch Bâle?", "p4", ["p1", "p6"]),
          ("日本の首都は?", "p5", ["p3", "p7"]),
          ("Apa ibu kota Indonesia?", "p6", ["p1", "p5"]),
          ("Which lord built the castle in Osaka?", "p7", ["p3", "p5"]),
          ("Is Berlin the capital?", "p2", ["p1", "p6"])]
    return [{"id": f"q{i}", "question": q, "positive_ids": [p], "negative_ids": n}
            for i, (q, p, n) in enumerate(qs)]


def test_training_loss_decreases_and_model_reloads(tiny_base, tmp_path):
    import torch

    from retriever.bm25_aug.model import AugmentationModel
    from retriever.bm25_aug.pieces import CollectionStats, piece_ids
    from retriever.bm25_aug.task import AugmentTask, TaskConfig

    random.seed(0)
    torch.manual_seed(0)
    model = AugmentationModel.from_pretrained(tiny_base, top_terms=8)
    docs = piece_ids(model.tokenizer, [p.contents() for p in _passages()])
    stats = CollectionStats(docs, model.vocab_size)
    rows = {p.id: i for i, p in enumerate(_passages())}
    exs = _examples()
    task = AugmentTask(model, stats, rows, dev=exs, config=TaskConfig(hard_negatives=2, reg=0.01, top_terms=8,
                                                                      dev_negatives=3))
    before = task.evaluate(model)
    assert {"mrr", "r@1", "bm25_mrr", "bm25_r@1"} <= set(before)
    batch = task.collate(exs)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    with torch.no_grad():
        first = float(task.loss(model, batch))
    for _ in range(15):
        opt.zero_grad()
        loss = task.loss(model, batch)
        loss.backward()
        opt.step()
    with torch.no_grad():
        last = float(task.loss(model, batch))
    assert last < first * 0.8, (first, last)
    assert model.encoder.get_input_embeddings().weight.grad is None  # the word embeddings stay frozen

    folder = tmp_path / "model"
    task.save(model, folder)
    texts = [ex["question"] for ex in exs]
    again = AugmentationModel.load(folder)
    w1, w2 = model.query_weights(texts), again.query_weights(texts)
    assert w1 == w2 and all(w1)
    assert all(len(set(w) - set(bow)) <= 8 for w, bow in
               zip(w1, [model.tokenizer.convert_ids_to_tokens(ids) for ids in piece_ids(model.tokenizer, texts)]))
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size < 0.5 * sum(f.stat().st_size for f in tiny_base.iterdir() if f.suffix == ".safetensors")


def test_untrained_model_is_close_to_plain_bm25(tiny_base):
    """With u = 0, c = 1 and the augmentation off, the query is exactly the question's pieces."""
    from retriever.bm25_aug.model import AugmentationModel
    from retriever.bm25_aug.pieces import piece_ids

    model = AugmentationModel.from_pretrained(tiny_base)
    texts = ["capital of France, capital", "東京の首都"]
    weights = model.query_weights(texts, top_terms=0)
    tok = model.tokenizer
    for w, ids in zip(weights, piece_ids(tok, texts)):
        counts: dict[str, float] = {}
        for p in tok.convert_ids_to_tokens(ids):
            counts[p] = counts.get(p, 0.0) + 1.0
        assert set(w) == set(counts)
        for p in w:
            assert w[p] >= counts[p] - 1e-6   # bow + a ≥ bow, with w = 1


@pytest.mark.slow
def test_head_learning_rate_groups_and_softplus_augmentation(tiny_base, tmp_path):
    """The heads get their own learning rate; softplus keeps every entry of a(q) positive (so a
    gradient reaches it), ReLU zeroes most; the activation is saved with the model; a search
    query still keeps only top_terms augmentation pieces."""
    import torch

    from retriever.bm25_aug.model import AugmentationModel
    from retriever.bm25_aug.pieces import CollectionStats, piece_ids
    from retriever.bm25_aug.task import AugmentTask, TaskConfig
    from xqa.errors import XqaError

    relu = AugmentationModel.from_pretrained(tiny_base, top_terms=4)
    soft = AugmentationModel.from_pretrained(tiny_base, top_terms=4, activation="softplus")
    enc = soft.tokenize(["capital of France", "日本の首都"])
    with torch.no_grad():
        a_soft, _ = soft(enc["input_ids"], enc["attention_mask"])
        a_relu, _ = relu(enc["input_ids"], enc["attention_mask"])
    assert bool((a_soft > 0).all()) and float((a_relu == 0).float().mean()) > 0.9
    soft.write(tmp_path / "m")
    again = AugmentationModel.load(tmp_path / "m")
    assert again.activation == "softplus"
    texts = ["capital of France", "日本の首都"]
    for w, ids in zip(again.query_weights(texts), piece_ids(again.tokenizer, texts)):
        assert len(set(w) - set(again.tokenizer.convert_ids_to_tokens(ids))) <= 4
    with pytest.raises(XqaError, match="activation"):
        AugmentationModel.from_pretrained(tiny_base, activation="tanh")

    stats = CollectionStats(piece_ids(soft.tokenizer, [p.contents() for p in _passages()]), soft.vocab_size)
    task = AugmentTask(soft, stats, {p.id: i for i, p in enumerate(_passages())},
                       config=TaskConfig(head_lr_scale=50.0))
    groups = task.param_groups(soft, 0.01, 1e-4)
    heads = groups[-1]
    assert heads["lr"] == pytest.approx(5e-3) and heads["weight_decay"] == 0.0
    assert {id(p) for p in heads["params"]} == {id(soft.u), id(soft.c), id(soft.bias)}
    encoder = {id(p) for g in groups[:-1] for p in g["params"]}
    assert id(soft.encoder.get_input_embeddings().weight) not in encoder   # frozen
    assert len(encoder) == sum(1 for p in soft.encoder.parameters() if p.requires_grad)


def test_augmented_retriever_scores_and_contract(tiny_base, pieces_index, tmp_path):
    from retriever.bm25_aug.model import AugmentationModel, AugmentedRetriever

    model = AugmentationModel.from_pretrained(tiny_base, top_terms=4)
    model.write(tmp_path / "m")
    r = AugmentedRetriever.load(tmp_path / "m", pieces_index)
    stats = _stats(pieces_index)
    ids = [p.id for p in _passages()]
    qs = [Question(f"q{i}", t, "en") for i, t in enumerate(["capital of France", "Tokyo Osaka", "東京", "x y"])]
    weights = r.model.query_weights([q.question for q in qs])
    for k in (0, 2, 20):
        found = r.search(qs, k)
        assert len(found) == len(qs)
        for hits, w in zip(found, weights):
            assert not contract_violations(hits, k)
            assert all(h.source == "bm25-aug" for h in hits)
            if k == 20:
                _check(hits, stats.bm25(_dense(pieces_index.tokenizer, w))[0], ids)
    assert r.search([], 5) == []


def test_cap_per_set():
    from xqa.training.bm25_aug import cap_per_set

    exs = [{"source": "squad", "i": i} for i in range(10)] + [{"source": "tydi", "i": i} for i in range(3)]
    kept = cap_per_set(exs, 4, seed=0)
    assert [e["source"] for e in kept].count("squad") == 4 and [e["source"] for e in kept].count("tydi") == 3
    assert cap_per_set(exs, 0, seed=0) == exs


@pytest.mark.slow
def test_commands_index_train_and_resume(converted_e5, tiny_base, tmp_path):
    import json

    from retriever.bm25_aug.model import AugmentationModel, AugmentedRetriever
    from retriever.bm25_aug.pieces import PiecesRetriever
    from xqa.cli import main

    passages = tmp_path / "passages.jsonl"
    passages.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text, "lang": p.lang},
                                           ensure_ascii=False) + "\n" for p in _passages()), encoding="utf-8")
    questions = tmp_path / "train.jsonl"
    questions.write_text("".join(json.dumps({**ex, "lang": "en", "answers": ["x"], "source": f"set{i % 2}"},
                                            ensure_ascii=False) + "\n" for i, ex in enumerate(_examples())),
                         encoding="utf-8")
    index = tmp_path / "pieces"
    assert main(["index", "pieces", "--passages", str(passages), "--encoder", str(converted_e5),
                 "--out", str(index), "--quiet"]) == 0
    out = tmp_path / "run"
    argv = ["train", "bm25-aug", "--train", str(questions), "--dev", str(questions), "--passages", str(passages),
            "--init", str(tiny_base), "--out", str(out), "--batch-size", "4", "--hard-negatives", "1",
            "--max-steps", "2", "--eval-every", "1", "--top-terms", "4", "--quiet"]
    assert main(argv) == 0
    assert (out / "best" / "config.json").is_file() and (out / "checkpoint" / "config.json").is_file()
    assert main(argv) == 0  # finished: a rerun does nothing
    pieces = PiecesRetriever.load(index)
    r = AugmentedRetriever.load(out, pieces)
    assert isinstance(r.model, AugmentationModel)
    hits = r.search([Question("q", "capital of France", "en")], 3)[0]
    assert hits and not contract_violations(hits, 3)
    # both methods search from the CLI (indexes named on the command line)
    for method in ("pieces", "bm25-aug"):
        res = tmp_path / f"{method}.jsonl"
        assert main(["search", "--questions", str(questions), "--pieces-index", str(index), "--bm25-aug-model",
                     str(out), "--passages", str(passages), "--method", method, "--k", "2", "--out", str(res)]) == 0
        rows = [json.loads(line) for line in res.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == len(_examples()) and all(1 <= len(r["ctxs"]) <= 2 for r in rows)
        assert rows[0]["ctxs"][0]["id"] == "p1"   # "Which city is the capital of France?"


@pytest.mark.slow
def test_index_refuses_to_replace(converted_e5, tmp_path):
    from retriever.bm25_aug.pieces import build_pieces_index

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError):
        build_pieces_index(_passages(False), converted_e5, other, progress=False)
    assert (other / "notes.txt").is_file()
    done = tmp_path / "done"
    build_pieces_index(_passages(False)[:2], converted_e5, done, progress=False)
    with pytest.raises(FileExistsError):
        build_pieces_index(_passages(False)[:2], converted_e5, done, progress=False)
    assert build_pieces_index(_passages(False), converted_e5, done, progress=False, overwrite=True)["passages"] == 6


def test_bad_passages_are_named(converted_e5, tmp_path):
    from retriever.bm25_aug.pieces import build_pieces_index
    from xqa.errors import XqaError

    dup = [Passage("a", "", "one", "en"), Passage("a", "", "two", "en")]
    with pytest.raises(XqaError, match="duplicate passage id 'a'"):
        build_pieces_index(dup, converted_e5, tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()
