"""The SPAR index and retriever (SPAR, Chen et al. 2022, §4.2): ONE FAISS index of ``[P(p) ; PΛ(p)]``.

A query is ``[Q(q) ; μ·QΛ(q)]``, so its inner product with a passage is
exactly ``sim(q, p) + μ·simΛ(q, p)``, and μ lives on the query side: tuning μ
never touches the index. The *weighted sum* variant stores ``P(p) + PΛ(p)``
and queries with ``Q(q) + μ·QΛ(q)`` (same dimension as the dense index; needs
equal dims; the score then has cross terms, as in the paper).

Like the dense index, vectors are kept per language and searched globally
(each language's top-k merged by score, exact for flat indexes): SPAR searches
every language at once, as the dense retriever does.

A concatenated index also serves its two halves exactly: query weights
``(1, 0)`` give the dense retriever's scores, ``(0, 1)`` Λ's
(:meth:`SparRetriever.part`), which the diagnostics and reports use.

Layout (``OUT``)::

    config.json          kind "spar_index": mode, dims, μ, both encoders, index params
    index/               LanguageIndexes folder (retriever.dense.index)
    lexical/shards/...   Λ passage vectors, resumable chunks (retriever.dense.encode)
    dense/shards/...     dense passage vectors, only when the dense index kept none
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from retriever.base import check_k
from xqa.artifacts import folder_ref, is_complete, load_config, load_finished, resolve_ref, save_config
from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

KIND = "spar_index"
MODES = ("concat", "sum")
# μ grid of the paper (Appendix A): 0.1 ... 1.0 step 0.1 and their reciprocals, 19 values.
MU_GRID: tuple[float, ...] = tuple(sorted({round(i / 10, 1) for i in range(1, 11)}
                                          | {round(10 / i, 6) for i in range(1, 10)}))


def model_folder(folder: str | Path) -> Path:
    """A bi-encoder folder: ``folder`` itself or, for a training run, ``folder/best``."""
    folder = Path(folder)
    if (folder / "best" / "config.json").is_file() and not (folder / "query_encoder").is_dir():
        return folder / "best"
    if not is_complete(folder):
        raise XqaError(f"{folder}: not a trained bi-encoder (no config.json; no best/)")
    return folder


def combine(dense: np.ndarray, lexical: np.ndarray, mode: str, mu: float = 1.0,
            dense_weight: float = 1.0) -> np.ndarray:
    """``[w·D ; μ·L]`` (concat, ``[n, d1+d2]``) or ``w·D + μ·L`` (sum, ``[n, d]``), float32."""
    if dense.shape[0] != lexical.shape[0]:
        raise XqaError(f"{dense.shape[0]} dense vectors but {lexical.shape[0]} Λ vectors")
    d = dense.astype(np.float32, copy=False) * np.float32(dense_weight)
    x = lexical.astype(np.float32, copy=False) * np.float32(mu)
    if mode == "concat":
        return np.ascontiguousarray(np.concatenate([d, x], axis=1))
    if mode == "sum":
        if d.shape[1] != x.shape[1]:
            raise XqaError(f"the weighted-sum SPAR index needs equal vector sizes; dense has {d.shape[1]}, "
                           f"Λ has {x.shape[1]} (use --mode concat)")
        return np.ascontiguousarray(d + x)
    raise XqaError(f"unknown SPAR mode {mode!r}; choose from {', '.join(MODES)}")


def _dense_vectors(dense_dir: Path, cfg: dict, passages: Iterable[Passage], out: Path, encode,
                   progress: bool, made_by: dict):
    """Chunks ``(vectors, ids, langs)`` of the dense passage vectors: the dense index's own
    shards when it kept them, else encoded afresh (resumably) into ``OUT/dense`` (again where
    ``made_by``, the encoder and passages, differs from what encoded them)."""
    from retriever.dense.encode import encode_shard, read_shards, shard_done

    n = int(cfg.get("num_shards", 1))
    if all(shard_done(dense_dir, s, n) for s in range(n)):
        return read_shards(dense_dir, n), True
    encode_shard(encode(), passages, out / "dense", 0, 1, progress=progress, made_by=made_by, stale="redo")
    return read_shards(out / "dense", 1), False


def build_spar_index(dense_dir: str | Path, lexical_dir: str | Path, passages: Iterable[Passage],
                     out_dir: str | Path, *, mode: str = "concat", params=None, overwrite: bool = False,
                     batch_size: int = 64, device: str = "cpu", progress: bool = True) -> dict:
    """Build the SPAR index in ``out_dir``; resumable (encoded chunks are kept until done).

    ``dense_dir``: a finished ``xqa index dense`` folder (its encoded shards are
    reused when present); ``lexical_dir``: the Λ model (a bi-encoder folder or
    its training run); ``passages``: the same passages the dense index holds.
    Returns the written config.
    """
    from retriever.dense.encode import (
        encode_shard,
        index_config,
        passages_fingerprint,
        read_shards,
        resolve_model_dir,
    )
    from retriever.dense.index import IndexParams, LanguageIndexes
    from retriever.dense.model import BiEncoder

    if mode not in MODES:
        raise XqaError(f"unknown SPAR mode {mode!r}; choose from {', '.join(MODES)}")
    out, dense_dir = Path(out_dir), Path(dense_dir)
    if is_complete(out) and not overwrite:
        raise FileExistsError(f"{out} is a finished SPAR index; pass --overwrite (overwrite=True) to rebuild it")
    if is_complete(out):
        (out / "config.json").unlink()
    dcfg = index_config(dense_dir)
    dense_model_dir = resolve_model_dir(dense_dir, dcfg["model"])
    lex_dir = model_folder(lexical_dir)
    lex = BiEncoder.load(lex_dir, device=device)
    dense_dim = int(dcfg["dim"])
    if mode == "sum" and lex.dim != dense_dim:
        raise XqaError(f"the weighted-sum SPAR index needs equal vector sizes; dense has {dense_dim}, "
                       f"Λ has {lex.dim} (use --mode concat)")
    out.mkdir(parents=True, exist_ok=True)
    passages = list(passages)
    fingerprint = passages_fingerprint(passages)

    # OUT/lexical and OUT/dense hold this build's own vectors: encoded again where Λ, the dense
    # encoder or the passages are not those that encoded them
    encode_shard(lambda ps: lex.encode_passages(ps, batch_size=batch_size), passages, out / "lexical",
                 0, 1, progress=progress, made_by={"model": str(lex_dir.resolve()), "passages": fingerprint},
                 stale="redo")
    lex_rows: dict[str, np.ndarray] = {}
    for vec, ids, _ in read_shards(out / "lexical", 1):
        for i, pid in enumerate(ids):
            lex_rows[pid] = vec[i]

    def dense_encoder():
        model = BiEncoder.load(dense_model_dir, device=device)
        return lambda ps: model.encode_passages(ps, batch_size=batch_size)

    chunks, reused = _dense_vectors(dense_dir, dcfg, passages, out, dense_encoder, progress,
                                    {"model": str(Path(dense_model_dir).resolve()), "passages": fingerprint})
    groups: dict[str, tuple[list[np.ndarray], list[str]]] = {}
    for vec, ids, langs in chunks:
        missing = [p for p in ids if p not in lex_rows]
        if missing:
            raise XqaError(f"passage {missing[0]!r} of the dense index is not in the passages given "
                           f"({len(missing)} missing in one chunk): pass the passages the dense index holds")
        lvec = np.stack([lex_rows[p] for p in ids]) if ids else np.zeros((0, lex.dim), np.float32)
        both = combine(vec, lvec, mode)
        langs_arr = np.asarray(langs)
        for lang in dict.fromkeys(langs):
            sel = np.nonzero(langs_arr == lang)[0]
            vs, is_ = groups.setdefault(lang, ([], []))
            vs.append(both[sel])
            is_.extend(ids[i] for i in sel)
    merged = {lang: (np.concatenate(vs), is_) for lang, (vs, is_) in groups.items()}
    params = params or IndexParams(**dcfg.get("index", {}))
    indexes = LanguageIndexes.build(merged, params, progress=progress)
    indexes.save(out / "index")
    config = {
        "mode": mode, "mu": 1.0, "dim": indexes.dim, "dense_dim": dense_dim, "lexical_dim": lex.dim,
        "dense_model": folder_ref(dense_model_dir, out), "lexical_model": folder_ref(lex_dir, out),
        "dense_index": folder_ref(dense_dir, out), "reused_dense_shards": reused,
        "index": vars(params), "passages": len(indexes),
        "languages": {k: len(v) for k, v in indexes.ids.items()},
    }
    save_config(out, KIND, config)
    return load_config(out, KIND)


class SparRetriever:
    """SPAR search: query ``[w·Q(q) ; μ·QΛ(q)]`` against the one index (``w`` = 1).

    ``with_mu`` / ``part`` return views that share the encoders and the index.
    """

    def __init__(self, dense_model, lexical_model, indexes, mode: str = "concat", mu: float = 1.0,
                 dense_weight: float = 1.0, source: str = "spar", batch_size: int = 128):
        if mode not in MODES:
            raise XqaError(f"unknown SPAR mode {mode!r}")
        want = dense_model.dim + lexical_model.dim if mode == "concat" else dense_model.dim
        if indexes.dim and indexes.dim != want:
            raise XqaError(f"SPAR index vectors have size {indexes.dim}, the encoders give {want}")
        self.dense_model, self.lexical_model, self.indexes = dense_model, lexical_model, indexes
        self.mode, self.mu, self.dense_weight = mode, float(mu), float(dense_weight)
        self.source, self.batch_size = source, batch_size

    @classmethod
    def load(cls, folder: str | Path, mu: float | None = None, *, languages: Iterable[str] | None = None,
             device: str = "cpu", use_gpu: bool | None = None, batch_size: int = 128) -> SparRetriever:
        """Load ``xqa index spar``'s folder; ``mu`` overrides the recorded weight (default 1)."""
        from retriever.dense.index import LanguageIndexes
        from retriever.dense.model import BiEncoder

        folder = Path(folder)
        cfg = load_finished(folder, KIND, "SPAR index (run `xqa index spar`)")
        dense = BiEncoder.load(resolve_ref(folder, cfg["dense_model"], "dense encoder"), device=device)
        lex = BiEncoder.load(resolve_ref(folder, cfg["lexical_model"], "Λ encoder"), device=device)
        indexes = LanguageIndexes.load(folder / "index", languages=languages, use_gpu=use_gpu)
        return cls(dense, lex, indexes, cfg["mode"], cfg.get("mu", 1.0) if mu is None else mu,
                   batch_size=batch_size)

    # ------------------------------------------------------------------ views
    def with_mu(self, mu: float) -> SparRetriever:
        """The same retriever with query weight ``mu`` (index and encoders shared)."""
        view = copy.copy(self)
        view.mu = float(mu)
        return view

    def part(self, which: str) -> SparRetriever:
        """Only one half of a concatenated index: ``"dense"`` (weights 1, 0) or ``"lexical"`` (0, 1).

        Exact: the other half of each query vector is zero, so the scores are
        those of the dense retriever or of Λ alone.
        """
        if self.mode != "concat":
            raise XqaError("a weighted-sum SPAR index cannot be split into its halves; "
                           "build it with --mode concat")
        weights = {"dense": (1.0, 0.0), "lexical": (0.0, 1.0)}
        if which not in weights:
            raise XqaError(f"part must be 'dense' or 'lexical', not {which!r}")
        view = copy.copy(self)
        view.dense_weight, view.mu = weights[which]
        view.source = which
        return view

    # ------------------------------------------------------------------ search
    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(Q(q) [n, d1], QΛ(q) [n, d2])`` for question texts, encoded once for any μ.

        Keep a view with μ != 0 to encode for tuning: a zero-weight half is skipped.
        """
        texts = list(texts)
        # A half with weight 0 (a ``part`` view) is not encoded: zeros score the same.
        if self.dense_weight == 0.0:
            qd = np.zeros((len(texts), self.dense_model.dim), np.float32)
        else:
            qd = self.dense_model.encode_queries(texts, batch_size=self.batch_size)
        if self.mu == 0.0:
            ql = np.zeros((len(texts), self.lexical_model.dim), np.float32)
        else:
            ql = self.lexical_model.encode_queries(texts, batch_size=self.batch_size)
        return qd, ql

    def search_encoded(self, q_dense: np.ndarray, q_lexical: np.ndarray, k: int,
                       mu: float | None = None) -> list[list[Hit]]:
        """Top-``k`` for pre-encoded queries, with weight ``mu`` (default: this view's)."""
        k = check_k(k)
        q = combine(q_dense, q_lexical, self.mode, self.mu if mu is None else mu, self.dense_weight)
        return self.indexes.search(q, k, source=self.source)

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Global top-``k`` passages per question: scores descending, unique ids."""
        k = check_k(k)
        if not questions:
            return []
        qd, ql = self.encode([q.question for q in questions])
        return self.search_encoded(qd, ql, k)


__all__ = ["KIND", "MODES", "MU_GRID", "SparRetriever", "build_spar_index", "combine", "model_folder"]
