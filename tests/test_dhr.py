"""DLR / DHR: densification, the gated inner product, the one-pass DHR index and its commands."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retriever.base import contract_violations
from retriever.dhr.densify import (
    Csr,
    bm25_idf,
    bm25_weights,
    densify,
    densify_queries,
    document_frequencies,
    gip,
    gip_reference,
    slice_shape,
    term_counts,
)
from xqa.errors import XqaError


def csr_of(x: np.ndarray) -> Csr:
    """CSR arrays of a dense ``[n, V]`` matrix."""
    indptr = np.concatenate([[0], np.cumsum((x != 0).sum(1))]).astype(np.int64)
    r, c = np.nonzero(x)
    return Csr(indptr, c.astype(np.int64), x[r, c].astype(np.float32))


def one_per_slice(rng, n: int, v: int, m: int, strided: bool) -> np.ndarray:
    """Random non-negative rows with at most one non-zero per slice."""
    _, width = slice_shape(v, m)
    x = np.zeros((n, v))
    for i in range(n):
        for s in range(m):
            if rng.random() < 0.5:
                pos = int(rng.integers(width))
                dim = s + pos * m if strided else s * width + pos
                if dim < v:
                    x[i, dim] = rng.uniform(0.5, 4.0)
    return x


def random_rows(rng, n: int, v: int, density: float) -> np.ndarray:
    return np.where(rng.random((n, v)) < density, rng.uniform(0.5, 4.0, (n, v)), 0.0)


def f16(x: np.ndarray) -> np.ndarray:
    """Values as the index stores them (float16)."""
    return x.astype(np.float16).astype(np.float64)


# ------------------------------------------------------------------ densify + GIP


def test_slice_shape_pads_vocabulary():
    assert slice_shape(250_002, 4096) == (4096, 62)
    assert slice_shape(10, 3) == (3, 4)   # 12 >= 10 dims
    with pytest.raises(XqaError):
        slice_shape(10, 0)


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("v,m", [(24, 6), (23, 5), (40, 8)])  # 23 and 5: |V| padded to 25
def test_gip_is_exact_with_one_entry_per_slice(strided, v, m):
    rng = np.random.default_rng(v * 10 + m + strided)
    q, p = one_per_slice(rng, 4, v, m, strided), one_per_slice(rng, 7, v, m, strided)
    qv, qi = densify(csr_of(q), v, m, strided=strided)
    pv, pi = densify(csr_of(p), v, m, strided=strided)
    got = gip(qv, qi, pv, pi)
    assert got == pytest.approx(f16(q) @ f16(p).T, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("v,m", [(30, 4), (37, 6)])
def test_gip_is_between_zero_and_dot_and_matches_the_reference(strided, v, m):
    rng = np.random.default_rng(v + m + 100 * strided)
    q, p = random_rows(rng, 5, v, 0.3), random_rows(rng, 9, v, 0.4)
    q, p = f16(q), f16(p)   # what densify keeps
    qv, qi = densify(csr_of(q), v, m, strided=strided)
    pv, pi = densify(csr_of(p), v, m, strided=strided)
    got = gip(qv, qi, pv, pi)
    assert (got >= 0).all()
    assert (got <= q @ p.T + 1e-4).all()
    assert (got < q @ p.T - 1e-3).any()   # collisions lose something here
    assert got == pytest.approx(gip_reference(q, p, m, strided=strided), rel=1e-5, abs=1e-5)


def test_densify_keeps_max_and_position_and_pads():
    # |V| = 7, M = 3 -> N = 3 (9 padded dims); contiguous slices [0,3) [3,6) [6,9)
    x = np.array([[1.0, 3.0, 2.0, 0.0, 0.0, 0.0, 5.0]])
    val, idx = densify(csr_of(x), 7, 3)
    assert val.dtype == np.float16 and idx.dtype == np.uint8
    assert val.tolist() == [[3.0, 0.0, 5.0]] and idx.tolist() == [[1, 0, 0]]
    # strided: slice m = {m, m+3, m+6}: slice 0 = dims 0, 3, 6 -> 5 at position 2
    val, idx = densify(csr_of(x), 7, 3, strided=True)
    assert val.tolist() == [[5.0, 3.0, 2.0]] and idx.tolist() == [[2, 0, 0]]


def test_wide_slices_take_uint16_positions():
    x = np.zeros((1, 1000))
    x[0, 700] = 1.0
    val, idx = densify(csr_of(x), 1000, 2)   # N = 500
    assert idx.dtype == np.uint16 and idx.tolist() == [[0, 200]]


def test_query_collision_is_broken_by_idf():
    # pieces 0 and 1 share slice 0 (M = 2, N = 2); piece 1 is rarer, so the query keeps it
    docs = [[0, 0, 2], [0, 1], [0, 3], [0, 2]]
    counts, lengths = term_counts(docs, 4)
    df = document_frequencies(counts, 4)
    idf = bm25_idf(df, len(docs))
    assert idf[1] > idf[0]
    qv, qi = densify_queries([[0, 1], [1, 0, 0], [0]], idf, df, 2)
    assert qv.tolist() == [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    assert qi.tolist() == [[1, 0], [1, 0], [0, 0]]
    # a piece no passage holds is dropped: it cannot hide piece 0 of its slice
    qv, qi = densify_queries([[0, 1]], idf, np.array([4, 0, 2, 1]), 2)
    assert qi.tolist() == [[0, 0]]


def test_gip_without_collisions_is_bm25_over_pieces():
    docs = [[0, 5, 5, 9], [1, 5, 7], [2, 3, 9, 9, 9], [4, 6, 8, 1]]
    v, k1, b = 10, 0.9, 0.4
    counts, lengths = term_counts(docs, v)
    df = document_frequencies(counts, v)
    idf = bm25_idf(df, len(docs))
    w = bm25_weights(counts, lengths, idf, k1, b)
    pv, pi = densify(w, v, v)   # N = 1: no collisions at all
    query = [5, 9, 9]
    qv, qi = densify_queries([query], idf, df, v)
    got = gip(qv, qi, pv, pi)[0]
    avgdl = np.mean([len(d) for d in docs])
    want = []
    for d in docs:
        s = 0.0
        for t in set(query):
            tf = d.count(t)
            if tf:
                n = len(docs)
                idf_t = np.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf_t * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
        want.append(s)
    assert got == pytest.approx(np.array(want), rel=2e-3)   # float16 storage


def test_densify_rejects_negative_values():
    with pytest.raises(XqaError):
        densify(csr_of(np.array([[1.0, -1.0]])), 2, 1)


# ------------------------------------------------------------------ the DHR index end to end


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small world, a tiny random dense encoder with its SentencePiece tokenizer, its dense index,
    and the DHR index over it (contiguous, M = 64) plus a strided one."""
    import torch

    from retriever.dense.encode import build_indexes, encode_shard, model_info
    from retriever.dense.index import IndexParams
    from retriever.dense.model import BiEncoder
    from retriever.dhr.index import build_dhr_index
    from xqa.cli import main
    from xqa.io import read_passages, read_questions
    from xqa.tokenizer import train_tokenizer

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("dlr")
    assert main(["world", "build", "--out", str(root / "world"), "--size", "small", "--seed", "3"]) == 0
    passages = list(read_passages(root / "world" / "passages.jsonl"))
    train_tokenizer((t for p in passages for t in (p.title, p.text)), root / "tok", vocab_size=1200)
    model = BiEncoder.from_scratch(root / "tok", "tiny", seed=1, query_max_length=32, passage_max_length=64)
    model.save(root / "model")
    encode_shard(model.encode_passages, passages, root / "dense", progress=False)
    build_indexes(root / "dense", 1, IndexParams(), model_info(root / "model", root / "dense"), progress=False)
    cfg = build_dhr_index(root / "dense", passages, root / "dhr", slices=64, lam=0.5, progress=False)
    build_dhr_index(root / "dense", passages, root / "dhr_strided", slices=64, strided=True, progress=False)
    questions = read_questions(root / "world" / "dev.jsonl")
    return {"root": root, "passages": passages, "questions": questions, "config": cfg, "model": model}


def brute(tiny, folder: Path, questions, lam: float):
    """``{id: GIP + λ·dense}`` for every passage, from the definitions (dense vectors, no slices)."""
    from retriever.dhr.index import load_tokenizer, passage_text, pieces

    cfg = json.loads((folder / "config.json").read_text())
    tok, vocab = load_tokenizer(tiny["root"] / "model")
    ps = tiny["passages"]
    counts, lengths = term_counts(pieces(tok, [passage_text(p) for p in ps]), vocab)
    df = document_frequencies(counts, vocab)
    idf = bm25_idf(df, len(ps))
    w = bm25_weights(counts, lengths, idf).to_dense(vocab)   # argmax on the unrounded weights
    qc, _ = term_counts(pieces(tok, [q.question for q in questions]), vocab)
    bow = (qc.to_dense(vocab) > 0) & (df > 0)[None, :]
    g = gip_reference(bow.astype(float), w, cfg["slices"], strided=cfg["strided"],
                      q_key=bow * idf[None, :])
    d = np.zeros_like(g)
    if lam:
        qd = tiny["model"].encode_queries([q.question for q in questions])
        pd = tiny["model"].encode_passages(ps).astype(np.float16).astype(np.float32)
        d = qd @ pd.T
    s = g + lam * d
    return [{p.id: float(s[i, j]) for j, p in enumerate(ps)} for i in range(len(questions))]


def assert_top_k(hits, want: dict, k: int):
    assert not contract_violations(hits, k)
    assert len(hits) == k
    for h in hits:
        assert h.score == pytest.approx(want[h.id], rel=2e-3, abs=2e-3)   # float16 storage
    assert [h.score for h in hits] == pytest.approx(sorted(want.values(), reverse=True)[:k], rel=2e-3, abs=2e-3)


@pytest.mark.slow
def test_index_layout_and_config(tiny):
    root, cfg = tiny["root"], tiny["config"]
    assert cfg["kind"] == "dhr_index" and cfg["slices"] == 64 and cfg["slice_dims"] == -(-cfg["vocab_size"] // 64)
    assert cfg["passages"] == len(tiny["passages"]) and sum(cfg["languages"].values()) == cfg["passages"]
    assert cfg["lam"] == 0.5 and cfg["dense_index"]["path"] == "../dense"
    for f in ("lex_val.npy", "lex_idx.npy", "dense.npy", "idf.npy", "ids.txt", "langs.txt"):
        assert (root / "dhr" / f).is_file()
    val = np.load(root / "dhr" / "lex_val.npy", allow_pickle=False)
    assert val.shape == (64, cfg["passages"]) and val.dtype == np.float16
    assert np.load(root / "dhr" / "lex_idx.npy", allow_pickle=False).dtype == np.uint8
    with pytest.raises(XqaError, match="is a finished DHR index; pass --overwrite"):
        from retriever.dhr.index import build_dhr_index

        build_dhr_index(root / "dense", tiny["passages"], root / "dhr", slices=64, progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("fp32_copy", [True, False])   # False: the dense rows are converted per search
@pytest.mark.parametrize("name,lam", [("dhr", 0.0), ("dhr", 0.5), ("dhr", 7.0), ("dhr_strided", 1.0)])
def test_search_equals_brute_force(tiny, name, lam, fp32_copy, monkeypatch):
    from retriever.dhr import DhrRetriever, index

    if not fp32_copy:
        monkeypatch.setattr(index, "DENSE_FP32_CACHE_BYTES", 0)
    folder = tiny["root"] / name
    r = DhrRetriever.load(folder).with_lambda(lam)
    qs = tiny["questions"][:6]
    got = r.search(qs, 10)
    for hits, want in zip(got, brute(tiny, folder, qs, lam)):
        assert_top_k(hits, want, 10)
        assert {h.source for h in hits} == {"dhr"}
    assert ("dense_fp32" in r._arrays) == (fp32_copy and lam > 0)


@pytest.mark.slow
def test_views_share_arrays_and_lexical_loads_no_encoder(tiny):
    from retriever.dhr import DhrRetriever

    base = DhrRetriever.load(tiny["root"] / "dhr")
    assert base.lam == 0.5 and DhrRetriever.load(tiny["root"] / "dhr", lam=2.0).lam == 2.0
    lex = base.lexical()
    qs = tiny["questions"][:8]
    hits = lex.search(qs, 5)
    assert "encoder" not in base._arrays   # GIP alone never loaded the query encoder
    lang = {p.id: p.lang for p in tiny["passages"]}
    for h in hits:
        assert not contract_violations(h, 5)
        assert all(x.source == "dlr" and x.lang == lang[x.id] for x in h)
    assert base.with_lambda(3.0)._arrays is base._arrays and base.lam == 0.5
    # dense part = the dense retriever's ranking (fp16 vectors)
    from retriever.dense import DenseRetriever

    dense = DenseRetriever.load(tiny["root"] / "dense").search(qs, 5)
    part = base.dense_part().search(qs, 5)
    for a, b in zip(dense, part):
        assert [h.score for h in b] == pytest.approx([h.score for h in a], rel=2e-4, abs=2e-3)
        assert {h.source for h in b} == {"dense"}
    assert base.search([], 5) == [] and base.search(qs[:2], 0) == [[], []]
    assert len(base.search(qs[:1], 10_000)[0]) == len(tiny["passages"])


@pytest.mark.slow
def test_row_chunks_give_the_same_ranking(tiny):
    from retriever.dhr import DhrRetriever

    r = DhrRetriever.load(tiny["root"] / "dhr")
    qs = tiny["questions"][:5]
    whole = r.search(qs, 12)
    r.chunk = 17
    chunked = r.search(qs, 12)
    for a, b in zip(chunked, whole):
        assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-6, abs=1e-5)
        assert not contract_violations(a, 12)


@pytest.mark.slow
@pytest.mark.parametrize("name,lam", [("dhr", 0.0), ("dhr", 0.5), ("dhr_strided", 7.0)])
def test_torch_search_equals_brute_force_and_the_numpy_path(tiny, name, lam):
    """The torch path (what a GPU runs; here on the CPU) ranks as the definition and as numpy do,
    in whole and in row chunks, and for the lexical view."""
    from retriever.dhr import DhrRetriever

    folder = tiny["root"] / name
    r = DhrRetriever.load(folder, device="cpu").with_lambda(lam)
    assert r.device == "cpu"
    qs = tiny["questions"][:6]
    got = r.search(qs, 10)
    for hits, want in zip(got, brute(tiny, folder, qs, lam)):
        assert_top_k(hits, want, 10)
    r.chunk = 23
    numpy_path = DhrRetriever.load(folder).with_lambda(lam)
    for a, b in zip(r.search(qs, 10), numpy_path.search(qs, 10)):
        assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-5, abs=1e-5)
        assert not contract_violations(a, 10)
    lex_t, lex_n = r.lexical().search(qs, 7), numpy_path.lexical().search(qs, 7)
    for a, b in zip(lex_t, lex_n):
        assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-5, abs=1e-5)
        assert {h.source for h in a} == {"dlr"}


@pytest.mark.slow
def test_missing_passages_and_bad_folder_are_errors(tiny, tmp_path):
    from retriever.dhr import DhrRetriever, build_dhr_index

    with pytest.raises(XqaError, match="not in the passages"):
        build_dhr_index(tiny["root"] / "dense", tiny["passages"][1:], tmp_path / "x", slices=8, progress=False)
    with pytest.raises(XqaError, match="not a finished DHR index"):
        DhrRetriever.load(tmp_path)


@pytest.mark.slow
def test_index_and_tune_commands(tiny, tmp_path, capsys):
    from xqa.cli import main
    from xqa.config import PipelineConfig

    root = tiny["root"]
    assert main(["index", "dhr", "--dense", str(root / "dense"), "--passages",
                 str(root / "world" / "passages.jsonl"), "--out", str(tmp_path / "dhr"), "--slices", "32",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "32 ×" in out and "passages" in out
    cfg = PipelineConfig(passages=str(root / "world" / "passages.jsonl"))
    cfg.retrieval.dense_index = str(root / "dense")
    cfg.retrieval.dhr_index = str(tmp_path / "dhr")
    cfg.save(tmp_path / "pipeline.json")
    assert main(["tune", "lambda", "--dev", str(root / "world" / "dev.jsonl"), "--config",
                 str(tmp_path / "pipeline.json"), "--max-questions", "20", "--at", "5",
                 "--grid", "0", "0.5", "2", "--write-config", "--out", str(tmp_path / "lam.json")]) == 0
    grid = json.loads((tmp_path / "lam.json").read_text())
    assert set(grid["grid"]) == {"0", "0.5", "2"}
    capsys.readouterr()   # a folder as --out is said before the search (it was after the grid)
    assert main(["tune", "lambda", "--dev", str(root / "world" / "dev.jsonl"), "--config",
                 str(tmp_path / "pipeline.json"), "--out", str(tmp_path / "dhr")]) == 1
    assert f"--out {tmp_path / 'dhr'} is a folder; name a file" in capsys.readouterr().err
    back = PipelineConfig.load(tmp_path / "pipeline.json")
    assert back.retrieval.lam == grid["best_lam"] and back.tuned["lam"] == grid["best_lam"]
    # both methods search from the CLI through the pipeline config
    dev = root / "world" / "dev.jsonl"
    for method in ("dlr", "dhr"):
        res = tmp_path / f"{method}.jsonl"
        assert main(["search", "--config", str(tmp_path / "pipeline.json"), "--method", method,
                     "--questions", str(dev), "--k", "7", "--out", str(res)]) == 0
        rows = [json.loads(line) for line in res.read_text().splitlines()]
        assert len(rows) == len(tiny["questions"]) and all(len(r["ctxs"]) == 7 for r in rows)


@pytest.mark.slow
def test_e5_vocabulary_and_default_slices(converted_e5):
    """multilingual-e5-small's 250,002 pieces: M = 4096 slices of 62 dims, one-byte positions."""
    from retriever.dhr.densify import idx_dtype
    from retriever.dhr.index import DEFAULT_SLICES, load_tokenizer, passage_text, pieces
    from xqa.records import Passage

    tok, vocab = load_tokenizer(converted_e5)
    assert vocab == 250_002
    m, n = slice_shape(vocab, DEFAULT_SLICES)
    assert (m, n) == (4096, 62) and idx_dtype(n) == np.uint8
    (ids,) = pieces(tok, [passage_text(Passage("p", "Berlin", "ist die Hauptstadt.", "de"))])
    assert ids and tok.cls_token_id not in ids and max(ids) < vocab   # no special tokens
