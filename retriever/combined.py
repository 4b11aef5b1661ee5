"""Retrievers built from the retrievers they fuse, and the fusion settings.

Each class here is *given* its component retrievers (anything with
``search(questions, k)``, see :mod:`retriever.base`) and merges their ranked
lists with a pure function of :mod:`retriever.fusion`: :class:`ScdRetriever`
(Sparse-Corroborate-Dense), :class:`HybridRetriever` (``dense + α·BM25``, Ma et
al.), :class:`SparseRomanRetriever` (``BM25 + w·cross-script BM25``) and
:class:`RrfRetriever` (reciprocal rank fusion). :class:`FusionSettings` declares
every fusion setting and its default once; :class:`FusionConfig` is a method with
its settings. Which parts a method joins, and how, is declared with the method
in :mod:`xqa.methods` (``xqa.methods.build_retriever``).
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

def sparse_search(sparse: Retriever, questions: Sequence[Question], k: int) -> list[list[Hit]]:
    """BM25 search where a question in a language without an index is searched as one of
    unknown language (in the indexes of its script), or, by a retriever that cannot, gets an
    empty list.

    The sparse retriever has one index per language; a question in a language it lacks must
    not stop a fused search (with no hits, SCD returns the dense list), and is searched as
    it would be had its language not been given. Passed as ``missing="script"`` to a
    retriever with ``script_search``, else as ``missing="empty"`` where ``search`` accepts it.
    """
    try:
        params = inspect.signature(sparse.search).parameters
    except (TypeError, ValueError):
        params = {}
    if "missing" in params:
        return sparse.search(questions, k, missing="script" if getattr(sparse, "script_search", False) else "empty")
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
    """The fusion method, the weights tuned on dev and the depth each side is searched to, declared
    once: ``pipeline.json``'s ``retrieval`` section (``xqa.config.RetrievalConfig``) holds these
    fields, and :class:`FusionConfig` adds what only a search sets."""

    method: str = "scd"
    max_frac: float = 0.2             # SCD: at most floor(max_frac*K) passages owe their place to BM25
    corroborated_order: str = "dense"  # SCD: order of the corroborated slice (dense | sparse)
    alpha: float = 1.0                # hybrid: dense + alpha * sparse
    normalize: bool = False           # hybrid: min-max normalise each list first
    mu: float | None = 1.0            # SPAR: query-side weight of Λ (None: the SPAR retriever's own)
    roman_weight: float = 1.0         # sparse+roman: BM25 + roman_weight * cross-script BM25
    lam: float | None = None          # DHR: GIP + lam * dense (None: the index's own)
    k_each: int | None = None         # hybrid / RRF / sparse+roman: depth k' of each side (None: k)


@dataclass(unsafe_hash=True)
class FusionConfig(FusionSettings):
    """How to fuse: the method, its weights and each side's depth (``pipeline.json`` holds them),
    and the settings only a search sets. Hashable: a pipeline keeps one retriever per configuration."""

    rrf_k: int = RRF_K                # RRF constant
    # settings of methods that FusionSettings does not declare, as sorted (name, value) pairs
    # (pipeline.json's retrieval.settings)
    extra: tuple[tuple[str, Any], ...] = ()

    def setting(self, name: str, default: Any = None) -> Any:
        """The setting ``name``: a field, else an entry of :attr:`extra`, else ``default``."""
        if name in {f.name for f in fields(self)}:
            return getattr(self, name)
        return dict(self.extra).get(name, default)

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
        if "extra" in d:
            d = {**d, "extra": tuple(tuple(pair) for pair in d["extra"])}
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


__all__ = [
    "FusionConfig",
    "FusionSettings",
    "HybridRetriever",
    "RrfRetriever",
    "ScdRetriever",
    "SparseRomanRetriever",
    "sparse_search",
]
