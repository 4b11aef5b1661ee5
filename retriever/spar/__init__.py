"""SPAR (Chen et al. 2022, "Salient Phrase Aware Dense Retrieval"): a dense lexical model Λ that imitates BM25, joined to a dense retriever.

Names are imported lazily: ``import retriever.spar`` loads neither torch nor FAISS.

- :mod:`.data` — Λ's training data from the BM25 teacher (sentence queries,
  top n_p positives, bottom n_n hard negatives; top-1 validation).
- :mod:`.lexical` — training Λ with the dense retriever's task and the shared loop.
- :mod:`.index` — the one FAISS index of ``[P ; PΛ]`` and :class:`SparRetriever`
  (query ``[Q ; μ·QΛ]``), the μ grid.
- :mod:`.lexical_index` — Λ alone (its own index; same-language search for MLQA).
- :mod:`.diagnostics` — rank-biased overlap, token shuffling (SPAR Tables 6, 7).
"""
from __future__ import annotations

from xqa.lazy import exports

_EXPORTS = {
    "RBO_P": ".diagnostics", "rbo": ".diagnostics", "mean_rbo": ".diagnostics",
    "shuffle_tokens": ".diagnostics",
    "TeacherConfig": ".data", "sample_sentence_queries": ".data", "teacher_examples": ".data",
    "split_sentences": ".data", "label": ".data",
    "teacher_data": ".lexical", "lexical_task": ".lexical",
    "SparRetriever": ".index", "build_spar_index": ".index", "MU_GRID": ".index", "MODES": ".index",
    "combine": ".index",
    "LexicalRetriever": ".lexical_index", "build_lexical_index": ".lexical_index",
}

__all__ = [
    "LexicalRetriever",
    "MODES",
    "MU_GRID",
    "RBO_P",
    "SparRetriever",
    "TeacherConfig",
    "build_lexical_index",
    "build_spar_index",
    "combine",
    "label",
    "lexical_task",
    "mean_rbo",
    "rbo",
    "sample_sentence_queries",
    "shuffle_tokens",
    "split_sentences",
    "teacher_data",
    "teacher_examples",
]


__getattr__ = exports(__name__, _EXPORTS)  # each name from its module, on first use
