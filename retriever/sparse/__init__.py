"""Per-language BM25 retrieval on Lucene (Anserini, the engine inside Pyserini).

Importing this package is cheap: the Java VM starts on first use
(:func:`java.ensure_jvm`), never at import, and Pyserini's Python side (~8 s,
torch and transformers) is not imported at all.

- :func:`build_sparse_indexes` — one Lucene index per language, each with its
  language's analyzer (:mod:`.analyzers`), written atomically and resumably.
- :class:`SparseRetriever` — batch-first search in each question's language.
"""
from retriever.sparse.analyzers import (
    AnalyzerChoice,
    AnalyzerFallbackWarning,
    choose_analyzer,
)
from retriever.sparse.index import build_sparse_indexes
from retriever.sparse.java import ensure_jvm, import_pyserini
from retriever.sparse.searcher import SparseRetriever

__all__ = [
    "AnalyzerChoice",
    "AnalyzerFallbackWarning",
    "SparseRetriever",
    "build_sparse_indexes",
    "choose_analyzer",
    "ensure_jvm",
    "import_pyserini",
]
