"""xqa's own index kinds and retrieval methods, declared once each (:mod:`xqa.methods` registers
them, in this order).

Index kinds are declared in the order ``xqa build`` makes them; methods in the order
``--method`` lists them. The retriever classes live in :mod:`retriever`, imported when a part is
loaded or a retriever made, never here at import.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from xqa.methods.spec import BuildStep, IndexKind, Method, Tunable

# ---------------------------------------------------------------------- index kinds


def _say(text: str) -> None:
    print(text, flush=True)


def _load_sparse(folder: str, pipeline: Any):
    from retriever.sparse import SparseRetriever

    return SparseRetriever.load(folder)


def _load_roman(folder: str, pipeline: Any):
    from retriever.sparse import SparseRetriever
    from xqa.errors import XqaError

    obj = SparseRetriever.load(folder)
    if not obj.cross_script:
        raise XqaError(f"{pipeline.config.retrieval.roman_index}: roman_index must be a cross-script BM25 index "
                       f"(xqa index sparse --cross-script), not a per-language one")
    return obj


def _load_dense(folder: str, pipeline: Any):
    from retriever.dense import DenseRetriever

    cfg = pipeline.config
    return DenseRetriever.load(folder, cfg.path(cfg.retrieval.dense_model))


def _load_spar(folder: str, pipeline: Any):
    from retriever.spar import SparRetriever

    return SparRetriever.load(folder, mu=pipeline.config.retrieval.mu)


def _load_dhr(folder: str, pipeline: Any):
    from retriever.dhr import DhrRetriever

    return DhrRetriever.load(folder)


def _load_pieces(folder: str, pipeline: Any):
    from retriever.bm25_aug.pieces import PiecesRetriever

    return PiecesRetriever.load(folder)


def _load_bm25_aug(folder: str, pipeline: Any):
    from retriever.bm25_aug.model import AugmentedRetriever

    return AugmentedRetriever.load(folder, pipeline.component("pieces"))


def _index_sparse(build: Any) -> None:
    from xqa.indexes import SparseIndexConfig, build_sparse, describe_sparse

    out = build.out / "bm25"
    _say(describe_sparse(build_sparse(SparseIndexConfig(passages=build.passages, out=out)), out))


def _index_roman(build: Any) -> None:
    """The stop-token share is the one chosen on the generated world (xqa.world.retrieval); the
    general default keeps every token, and no share was tuned on real text."""
    from xqa.indexes import SparseIndexConfig, build_sparse, describe_sparse
    from xqa.world.retrieval import CROSS_SCRIPT_STOP_FRACTION

    out = build.out / "roman"
    _say(describe_sparse(build_sparse(SparseIndexConfig(passages=build.passages, out=out, cross_script=True,
                                                        stop_fraction=CROSS_SCRIPT_STOP_FRACTION)), out))


def _index_dhr(build: Any) -> None:
    from xqa.indexes import DhrIndexConfig, build_dhr, describe_dhr

    out = build.out / "dhr"
    _say(describe_dhr(build_dhr(DhrIndexConfig(dense=build.out / "dense", passages=build.passages, out=out,
                                               slices=build.recipe.dhr_slices, overwrite=True)), out))


def _index_pieces(build: Any) -> None:
    from xqa.indexes import PiecesIndexConfig, build_pieces, describe_pieces

    out = build.out / "pieces"
    _say(describe_pieces(build_pieces(PiecesIndexConfig(passages=build.passages, encoder=build.out / "encoder",
                                                        out=out, overwrite=True)), out))


def _wants_pieces(build: Any) -> bool:
    return build.recipe.pieces or bool(build.recipe.bm25_aug)


INDEX_KINDS: tuple[IndexKind, ...] = (
    IndexKind("sparse", "--sparse-index", "BM25 index folder (xqa index sparse)", _load_sparse,
              field="sparse_index", alias="--bm25", label="BM25",
              stages=(BuildStep("BM25 indexes", "bm25", _index_sparse),)),
    IndexKind("roman", "--roman-index", "cross-script BM25 index folder (xqa index sparse --cross-script)",
              _load_roman, field="roman_index", alias="--roman", label="cross-script BM25",
              stages=(BuildStep("cross-script BM25 index", "roman", _index_roman),)),
    # the dense index and Λ reuse the shipped vectors and Λ where they apply (CorpusBuild.prebuilt)
    IndexKind("dense", "--dense-index", "dense FAISS index folder (xqa index dense)", _load_dense,
              field="dense_index", alias="--dense",
              stages=(BuildStep("dense index", "dense", lambda b: b.index_dense(), done=lambda b: b.dense_done()),)),
    IndexKind("spar", "--spar-index", "SPAR index folder (xqa index spar)", _load_spar,
              field="spar_index", alias="--spar",
              stages=(BuildStep("lexical model Λ", "lexical", lambda b: b.train_lexical(),
                                done=lambda b: b.lexical_done()),
                      BuildStep("SPAR index", "spar", lambda b: b.index_spar()))),
    IndexKind("dhr", "--dhr-index", "densified lexical + dense index folder (xqa index dhr): methods dlr, dhr",
              _load_dhr, field="dhr_index", alias="--dhr",
              stages=(BuildStep("DHR index (densified BM25 over e5 pieces + dense vectors)", "dhr", _index_dhr,
                                wanted=lambda b: bool(b.recipe.dhr_slices)),),
              build_hint="--dhr-slices M (e.g. 4096)"),
    IndexKind("pieces", "--pieces-index", "BM25 index over e5 pieces (xqa index pieces): methods pieces, bm25-aug",
              _load_pieces, field="pieces_index",
              stages=(BuildStep("BM25 index over e5 pieces", "pieces", _index_pieces, wanted=_wants_pieces),),
              build_hint="--pieces"),
    IndexKind("bm25_aug", "--bm25-aug-model",
              "learned BM25 query augmentation (xqa train bm25-aug): method bm25-aug", _load_bm25_aug,
              field="bm25_aug_model",
              in_build=lambda b: str(Path(b.recipe.bm25_aug).resolve()) if b.recipe.bm25_aug else None,
              build_hint="--bm25-aug MODEL (a trained augmentation: xqa train bm25-aug)"),
)


# ---------------------------------------------------------------------- tuning grids and fast paths

# DHR's λ grid: raw scores (GIP on the BM25 scale, e5 cosines near 0.8), so the useful λ is large
LAMBDA_GRID: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0,
                                  20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0, 2000.0, 5000.0)


def fused_depth(retrieval: Any) -> int:
    """k': the depth a pipeline searches each side of a score hybrid (or RRF) to, and fuses at:
    its ``retrieval.k`` (K), or a fusion config's ``max(k, k_each)``. A weight tuned on lists of
    another depth is tuned for another ranking (min-max normalisation reads each list's ends)."""
    return max(retrieval.k, getattr(retrieval, "k_each", None) or 0)


def alpha_grid(lo: float = 0.0, hi: float = 2.0, step: float = 0.05) -> list[float]:
    """``lo, lo+step, ...`` up to ``hi`` (``hi`` itself where ``step`` divides the span) without
    float drift (41 values by default); an error where that is one value or none."""
    from xqa.errors import XqaError

    n = math.floor((hi - lo) / step + 1e-9) if step > 0 else -1
    if n < 1:
        raise XqaError(f"a grid from {lo:g} to {hi:g} in steps of {step:g} holds {max(n + 1, 0)} value"
                       f"{'' if n == 0 else 's'}: give --step above 0 and below --max-alpha")
    return [round(lo + i * step, 10) for i in range(n + 1)]


def side_lists(pipeline: Any, kind: str, questions: list, depth: int, batch_size: int, desc: str) -> list:
    """One part's ranked lists of ``questions``, ``depth`` long (BM25: empty for a language
    without an index)."""
    from tqdm.auto import tqdm

    from retriever.combined import sparse_search
    from xqa.evaluation.judge import batched, search_all

    part = pipeline.component(kind)
    if kind != "sparse":
        return search_all(part, questions, depth, desc, batch_size)
    out: list = []
    for chunk in tqdm(list(batched(questions, batch_size)), desc=desc, unit="batch"):
        out.extend(sparse_search(part, chunk, depth))
    return out


def _hybrid_lists(first: str, second: str, normalized: bool):
    """Fast path of a score hybrid ``first + w·second``: each side searched once to k'."""

    def prepare(pipeline: Any, questions: list, depth: int, batch_size: int):
        from retriever.fusion import hybrid

        deep = max(depth, fused_depth(pipeline.config.retrieval))   # as deep as the pipeline fuses
        a = side_lists(pipeline, first, questions, deep, batch_size, first)
        b = side_lists(pipeline, second, questions, deep, batch_size, second)
        norm = pipeline.config.retrieval.normalize if normalized else False
        return lambda w: [hybrid(x, y, depth, w, norm) for x, y in zip(a, b)]

    return prepare


def spar_encoded(pipeline: Any, questions: list, batch_size: int):
    """SPAR's retriever at μ = 1 and the questions encoded once (dense and Λ halves)."""
    import numpy as np
    from tqdm.auto import tqdm

    spar = pipeline.component("spar").with_mu(1.0)
    qd, ql = [], []
    for i in tqdm(range(0, len(questions), batch_size), desc="encoding questions", unit="batch"):
        d, lx = spar.encode([q.question for q in questions[i: i + batch_size]])
        qd.append(d)
        ql.append(lx)
    return spar, np.concatenate(qd), np.concatenate(ql)


def _spar_lists(pipeline: Any, questions: list, depth: int, batch_size: int):
    """Fast path of μ: questions encoded once, each μ one search of ``[Q ; μ·QΛ]``."""
    spar, qd, ql = spar_encoded(pipeline, questions, batch_size)
    return lambda mu: spar.search_encoded(qd, ql, depth, mu=mu)


def dhr_encoded(pipeline: Any, questions: list, batch_size: int):
    """DHR's retriever at λ = 1 (its own index, searched ``batch_size`` questions at a time) and
    the questions' batches tokenized and encoded once."""
    from tqdm.auto import tqdm

    from retriever.dhr import DhrRetriever

    cfg = pipeline.config
    dhr = DhrRetriever.load(cfg.path(cfg.retrieval.dhr_index), batch_size=batch_size).with_lambda(1.0)
    batches = []
    for i in tqdm(range(0, len(questions), batch_size), desc="encoding questions", unit="batch"):
        batches.append(dhr.encode([q.question for q in questions[i: i + batch_size]], dense=True))
    return dhr, batches


def _dhr_lists(pipeline: Any, questions: list, depth: int, batch_size: int):
    """Fast path of λ: questions encoded once, each λ one exact pass over the unchanged index."""
    dhr, batches = dhr_encoded(pipeline, questions, batch_size)
    return lambda lam: [h for b in batches for h in dhr.search_encoded(b, depth, lam=lam)]


def _near_one(mu: float) -> float:
    return -abs(math.log(mu)) if mu > 0 else -math.inf


def _mu_grid():
    from retriever.spar.index import MU_GRID

    return MU_GRID


ALPHA = Tunable("alpha", "α", "hybrid: weight of the BM25 score", alpha_grid, fmt=lambda a: f"{a:.2f}",
                lists=_hybrid_lists("dense", "sparse", normalized=True), title="α (hybrid)",
                sides=("dense", "sparse"))
MU = Tunable("mu", "μ", "SPAR: query-side weight of Λ", _mu_grid, tie=_near_one, fmt=lambda m: f"{m:.3g}",
             lists=_spar_lists, title="μ (SPAR)")
ROMAN_WEIGHT = Tunable("roman_weight", "w", "sparse+roman: weight of the cross-script BM25 score", alpha_grid,
                       fmt=lambda w: f"{w:.2f}", lists=_hybrid_lists("sparse", "roman", normalized=False),
                       title="w (cross-script)", sides=("sparse", "roman"))
LAMBDA = Tunable("lam", "λ", "dhr: weight of the dense score next to GIP", lambda: LAMBDA_GRID,
                 lists=_dhr_lists, title="λ (DHR)", name="lambda", aliases=("--lam",))


# ---------------------------------------------------------------------- methods


def _spar(parts: dict, c: Any):
    """SPAR at the config's μ (a view sharing the index), or at the retriever's own when μ is None."""
    spar = parts["spar"]
    if c.mu is not None and getattr(spar, "mu", None) != c.mu:
        spar = spar.with_mu(c.mu)
    return spar


def _scd(dense: Any, sparse: Any, c: Any):
    from retriever.combined import ScdRetriever

    return ScdRetriever(dense, sparse, c.max_frac, c.corroborated_order)


def _hybrid(p: dict, c: Any):
    from retriever.combined import HybridRetriever

    return HybridRetriever(p["dense"], p["sparse"], c.alpha, c.normalize, c.k_each)


def _rrf(p: dict, c: Any):
    from retriever.combined import RrfRetriever

    return RrfRetriever([p["dense"], p["sparse"]], c.rrf_k, c.k_each)


def _sparse_roman(p: dict, c: Any):
    from retriever.combined import SparseRomanRetriever

    return SparseRomanRetriever(p["sparse"], p["roman"], c.roman_weight, c.k_each)


def _dhr(p: dict, c: Any):
    return p["dhr"] if c.lam is None else p["dhr"].with_lambda(c.lam)


METHODS: tuple[Method, ...] = (
    Method("sparse", ("sparse",), lambda p, c: p["sparse"], "sparse (BM25, question language)",
           "BM25 in the question's language", short="BM25", aliases=("bm25",)),
    Method("dense", ("dense",), lambda p, c: p["dense"], "dense (bi-encoder, all languages)",
           "dense retrieval (the bi-encoder searches every language)", short="dense"),
    Method("lexical", ("spar",), lambda p, c: p["spar"].part("lexical"), "Λ (SPAR's lexical model alone)",
           "SPAR's lexical model Λ alone (the lexical half of the SPAR index)", short="Λ", listed=False),
    Method("scd", ("dense", "sparse"), lambda p, c: _scd(p["dense"], p["sparse"], c),
           "SCD (sparse corroborates dense)",
           "Sparse-Corroborate-Dense: dense retrieval over every language, with the passages BM25 also "
           "finds in the question's language moved up and a share of BM25-only passages added", short="SCD"),
    Method("hybrid", ("dense", "sparse"), _hybrid, "hybrid (dense + α·BM25)",
           "a hybrid of dense retrieval over every language and BM25 in the question's language "
           "(dense score + α × BM25 score)", short="hybrid", tunables=(ALPHA,), aliases=("dense+bm25",)),
    Method("rrf", ("dense", "sparse"), _rrf, "RRF (reciprocal rank fusion)",
           "reciprocal rank fusion of dense retrieval and BM25", short="RRF"),
    Method("spar", ("spar",), _spar, "SPAR (dense ⊕ lexical Λ)",
           "SPAR: dense vectors concatenated with a lexical model trained to imitate BM25, in one index",
           short="SPAR", tunables=(MU,)),
    Method("spar+scd", ("spar", "sparse"), lambda p, c: _scd(_spar(p, c), p["sparse"], c), "SPAR+SCD",
           "SPAR, corroborated by BM25 in the question's language (SCD)", short="SPAR+SCD", tunables=(MU,)),
    Method("roman", ("roman",), lambda p, c: p["roman"], "cross-script BM25 (romanized, all languages)",
           "BM25 over every language romanized", short="cross-script BM25"),
    Method("sparse+roman", ("sparse", "roman"), _sparse_roman, "BM25 + cross-script BM25",
           "BM25 in the question's language plus BM25 over every language romanized",
           short="BM25+cross-script", tunables=(ROMAN_WEIGHT,)),
    Method("dlr", ("dhr",), lambda p, c: p["dhr"].lexical(), "DLR (densified BM25 over e5 pieces)",
           "densified BM25 over multilingual-e5 pieces (DLR: a gated inner product)", short="DLR"),
    Method("dhr", ("dhr",), _dhr, "DHR (densified BM25 ⊕ λ·dense, one index)",
           "DHR: densified BM25 over multilingual-e5 pieces plus λ × dense retrieval, in one index",
           short="DHR", tunables=(LAMBDA,)),
    Method("pieces", ("pieces",), lambda p, c: p["pieces"], "BM25 over e5 pieces (all languages)",
           "BM25 over multilingual-e5 pieces, every language in one index", short="BM25 over pieces"),
    Method("bm25-aug", ("pieces", "bm25_aug"), lambda p, c: p["bm25_aug"],
           "BM25 over pieces, learned query augmentation",
           "BM25 over multilingual-e5 pieces with a learned query augmentation", short="BM25-aug"),
)
