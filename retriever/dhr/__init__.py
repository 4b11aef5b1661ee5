"""DLR / DHR (Lin & Lin, "A Dense Representation Framework for Lexical and Semantic Matching", TOIS 2023).

Names are imported lazily: ``import retriever.dhr`` loads neither torch nor transformers.

- :mod:`.densify` — BM25 over tokenizer pieces as CSR arrays, densification into
  ``M`` slices (value + position of each slice's maximum, contiguous or strided),
  the gated inner product GIP and its brute-force reference.
- :mod:`.index` — the one DHR index (densified BM25 + the dense index's vectors)
  and :class:`DhrRetriever`: ``GIP + λ·dense`` (``dhr``), GIP alone (``dlr``).
"""
from __future__ import annotations

from xqa.lazy import exports

_EXPORTS = {
    "Csr": ".densify", "bm25_idf": ".densify", "bm25_weights": ".densify", "densify": ".densify",
    "densify_queries": ".densify", "document_frequencies": ".densify", "gip": ".densify",
    "gip_reference": ".densify", "gip_slice_major": ".densify", "slice_shape": ".densify",
    "term_counts": ".densify",
    "DEFAULT_LAMBDA": ".index", "DEFAULT_SLICES": ".index", "DhrRetriever": ".index", "build_dhr_index": ".index",
}

__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS)  # each name from its module, on first use
