"""Retrievers built from the retrievers they fuse.

Each class here is *given* its component retrievers (anything with
``search(questions, k)``, see :mod:`retriever.base`) and merges their ranked
lists with a pure function of :mod:`retriever.fusion`. One entry point,
:func:`build_retriever`, turns a :class:`FusionConfig` (a method and its weights) into a retriever:

==============  ==========================================================
``sparse``      BM25 in the question's language
``dense``       the dense retriever (global top-K over all languages)
``scd``         Sparse-Corroborate-Dense over (dense, BM25)
``hybrid``      score hybrid ``dense + α·BM25`` (Ma et al.)
``rrf``         reciprocal rank fusion of dense and BM25
``spar``        SPAR: one index of ``[dense ; Λ]`` vectors, query weight μ
``spar+scd``    Sparse-Corroborate-Dense over (SPAR as the dense side, BM25)
``roman``       cross-script BM25: one romanized index of all languages
``sparse+roman``  score hybrid ``BM25 + w·roman`` (question language + every script)
``dlr``         densified BM25 over e5 pieces, gated inner product (Lin & Lin, TOIS 2023)
``dhr``         one index of ``[DLR ; dense]``: ``GIP + λ·dense`` in one pass
``pieces``      BM25 over e5 pieces, every language in one Lucene index
``bm25-aug``    BM25 over pieces with a learned query augmentation (Chen & Wiseman 2023)
==============  ==========================================================

:func:`load_retriever` does the same from artifact folders.
"""
from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from retriever.base import Retriever, check_k
from retriever.fusion import RRF_K, hybrid, rrf, sparse_corroborate_dense
from xqa.errors import XqaError
from xqa.records import Hit, Question

METHODS = ("sparse", "dense", "scd", "hybrid", "rrf", "spar", "spar+scd", "roman", "sparse+roman",
           "dlr", "dhr", "pieces", "bm25-aug")
# which components each method needs
NEEDS: dict[str, tuple[str, ...]] = {
    "sparse": ("sparse",),
    "dense": ("dense",),
    "scd": ("dense", "sparse"),
    "hybrid": ("dense", "sparse"),
    "rrf": ("dense", "sparse"),
    "spar": ("spar",),
    "spar+scd": ("spar", "sparse"),
    "roman": ("roman",),
    "sparse+roman": ("sparse", "roman"),
    "dlr": ("dhr",),
    "dhr": ("dhr",),
    "pieces": ("pieces",),
    "bm25-aug": ("pieces", "bm25aug"),
}


def sparse_search(sparse: Retriever, questions: Sequence[Question], k: int) -> list[list[Hit]]:
    """BM25 search where a language without an index gives an empty list.

    The sparse retriever has one index per language; a cross-lingual question
    in a language it lacks must not stop a fused search (SCD then returns the
    dense list). Passed as ``missing="empty"`` when ``search`` accepts it.
    """
    try:
        params = inspect.signature(sparse.search).parameters
    except (TypeError, ValueError):
        params = {}
    if "missing" in params:
        return sparse.search(questions, k, missing="empty")
    return sparse.search(questions, k)


def _check_batch(name: str, lists: list, questions: Sequence[Question]) -> None:
    if len(lists) != len(questions):
        raise XqaError(f"{name} retriever returned {len(lists)} lists for {len(questions)} questions")


class ScdRetriever:
    """Sparse-Corroborate-Dense: each side retrieves ``k``, fused into at most ``k``.

    ``dense`` is the dense side (a dense retriever, or SPAR for ``spar+scd``);
    ``sparse`` is BM25 in the question's language.
    """

    def __init__(self, dense: Retriever, sparse: Retriever, max_frac: float = 0.2,
                 corroborated_order: str = "dense"):
        sparse_corroborate_dense([], [], 1, max_frac, corroborated_order)  # validate early
        self.dense, self.sparse = dense, sparse
        self.max_frac, self.corroborated_order = max_frac, corroborated_order

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        k = check_k(k)
        d = self.dense.search(questions, k)
        s = sparse_search(self.sparse, questions, k)
        _check_batch("dense", d, questions)
        _check_batch("sparse", s, questions)
        return [sparse_corroborate_dense(dh, sh, k, self.max_frac, self.corroborated_order)
                for dh, sh in zip(d, s)]


class HybridRetriever:
    """Score hybrid over the union of each side's top ``max(k, k_each)``."""

    def __init__(self, dense: Retriever, sparse: Retriever, alpha: float = 1.0,
                 normalize: bool = False, k_each: int | None = None):
        hybrid([], [], 0, alpha)  # validate early
        self.dense, self.sparse = dense, sparse
        self.alpha, self.normalize, self.k_each = alpha, normalize, k_each

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        k = check_k(k)
        kk = max(k, self.k_each or 0)
        d = self.dense.search(questions, kk)
        s = sparse_search(self.sparse, questions, kk)
        _check_batch("dense", d, questions)
        _check_batch("sparse", s, questions)
        return [hybrid(dh, sh, k, self.alpha, self.normalize) for dh, sh in zip(d, s)]


class SparseRomanRetriever:
    """BM25 in the question's language plus ``weight`` × cross-script BM25 (score hybrid).

    The question-language index finds passages in the question's own words; the
    cross-script one (:mod:`retriever.sparse.roman`) finds passages that name the
    question's people and places in another script, which is where the evidence
    of a cross-lingual question is. A question whose language has no BM25 index
    gets the cross-script list alone.
    """

    def __init__(self, sparse: Retriever, roman: Retriever, weight: float = 1.0, k_each: int | None = None):
        hybrid([], [], 0, weight)  # validate early
        self.sparse, self.roman, self.weight, self.k_each = sparse, roman, weight, k_each

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        k = check_k(k)
        kk = max(k, self.k_each or 0)
        s = sparse_search(self.sparse, questions, kk)
        r = self.roman.search(questions, kk)
        _check_batch("sparse", s, questions)
        _check_batch("roman", r, questions)
        return [[replace(h, source="sparse+roman") for h in hybrid(sh, rh, k, self.weight)]
                for sh, rh in zip(s, r)]


class RrfRetriever:
    """Reciprocal rank fusion of any retrievers, each searched to ``max(k, k_each)``."""

    def __init__(self, retrievers: Sequence[Retriever], rrf_k: int = RRF_K, k_each: int | None = None):
        if not retrievers:
            raise XqaError("RRF needs at least one retriever")
        self.retrievers, self.rrf_k, self.k_each = list(retrievers), rrf_k, k_each

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        k = check_k(k)
        kk = max(k, self.k_each or 0)
        per = []
        for r in self.retrievers:
            lists = sparse_search(r, questions, kk)
            _check_batch(type(r).__name__, lists, questions)
            per.append(lists)
        return [rrf([lists[i] for lists in per], k, self.rrf_k) for i in range(len(questions))]


@dataclass
class FusionSettings:
    """The fusion method and the weights tuned on dev, declared once: ``pipeline.json``'s
    ``retrieval`` section (``xqa.config.RetrievalConfig``) holds these fields, and
    :class:`FusionConfig` adds the depths that only a search sets."""

    method: str = "scd"
    max_frac: float = 0.2             # SCD: at most floor(max_frac*K) passages owe their place to BM25
    corroborated_order: str = "dense"  # SCD: order of the corroborated slice (dense | sparse)
    alpha: float = 1.0                # hybrid: dense + alpha * sparse
    normalize: bool = False           # hybrid: min-max normalise each list first
    mu: float | None = 1.0            # SPAR: query-side weight of Λ (None: the SPAR retriever's own)
    roman_weight: float = 1.0         # sparse+roman: BM25 + roman_weight * cross-script BM25
    lam: float | None = None          # DHR: GIP + lam * dense (None: the index's own)


@dataclass(unsafe_hash=True)
class FusionConfig(FusionSettings):
    """How to fuse: the method and its weights (``pipeline.json`` holds the tuned ones), and the
    depth of each side. Hashable: a pipeline keeps one retriever per configuration."""

    k_each: int | None = None         # hybrid / RRF: depth k' of each side (default k)
    rrf_k: int = RRF_K                # RRF constant

    @classmethod
    def of(cls, settings: FusionSettings, **overrides: Any) -> FusionConfig:
        """The fusion settings of ``settings`` (e.g. a ``RetrievalConfig``), with ``overrides``."""
        values = {f.name: getattr(settings, f.name) for f in fields(FusionSettings)}
        return cls(**{**values, **overrides})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FusionConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise XqaError(f"unknown fusion settings: {', '.join(sorted(unknown))}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_retriever(config: FusionConfig | str, *, sparse: Retriever | None = None,
                    dense: Retriever | None = None, spar: Retriever | None = None,
                    roman: Retriever | None = None, dhr: Any = None, pieces: Retriever | None = None,
                    bm25aug: Retriever | None = None) -> Retriever:
    """A retriever for ``config`` (a :class:`FusionConfig`, or a method name of :data:`METHODS`
    with the default settings) from the given components.

    ``config.mu`` sets SPAR's query-side weight (``spar.with_mu(mu)``, sharing the
    index, when it differs from the retriever's); ``None`` keeps the one the SPAR retriever has.
    ``config.lam`` likewise sets DHR's λ
    (``dhr.with_lambda``); ``dlr`` is DHR's lexical half (``dhr.lexical()``). ``bm25aug`` is the
    learned query augmentation's retriever (it searches the ``pieces`` index itself).
    """
    c = FusionConfig(method=config) if isinstance(config, str) else config
    if c.method not in NEEDS:
        raise XqaError(f"unknown retrieval method {c.method!r}; choose from {', '.join(METHODS)}")
    given = {"sparse": sparse, "dense": dense, "spar": spar, "roman": roman, "dhr": dhr, "pieces": pieces,
             "bm25aug": bm25aug}
    missing = [n for n in NEEDS[c.method] if given[n] is None]
    if missing:
        raise XqaError(f"method {c.method!r} needs a {' and a '.join(missing)} retriever")
    if spar is not None and c.mu is not None and getattr(spar, "mu", None) != c.mu:
        spar = spar.with_mu(c.mu)
    if c.method == "dlr":
        return dhr.lexical()
    if c.method == "dhr":
        return dhr if c.lam is None else dhr.with_lambda(c.lam)
    if c.method == "bm25-aug":
        return bm25aug
    if c.method in ("sparse", "dense", "spar", "roman", "pieces"):
        return {"sparse": sparse, "dense": dense, "spar": spar, "roman": roman, "pieces": pieces}[c.method]
    if c.method == "sparse+roman":
        return SparseRomanRetriever(sparse, roman, c.roman_weight, c.k_each)
    if c.method == "scd":
        return ScdRetriever(dense, sparse, c.max_frac, c.corroborated_order)
    if c.method == "spar+scd":
        return ScdRetriever(spar, sparse, c.max_frac, c.corroborated_order)
    if c.method == "hybrid":
        return HybridRetriever(dense, sparse, c.alpha, c.normalize, c.k_each)
    return RrfRetriever([dense, sparse], c.rrf_k, c.k_each)


__all__ = [
    "METHODS",
    "NEEDS",
    "FusionConfig",
    "FusionSettings",
    "HybridRetriever",
    "RrfRetriever",
    "ScdRetriever",
    "SparseRomanRetriever",
    "build_retriever",
    "sparse_search",
]
