"""Dense retrieval: bi-encoder (DPR loss), sharded encoding, per-language FAISS.

Names are imported lazily so ``import retriever.dense`` does not load torch or
FAISS; the first attribute access loads the module that defines it.

- :class:`BiEncoder` (``model``): question/passage towers over an HF encoder.
- :func:`contrastive_loss`, :func:`distributed_contrastive_loss` (``loss``).
- :func:`encode_shard`, :func:`build_indexes` (``encode``): resumable sharded encoding.
- :class:`LanguageIndexes`, :class:`IndexParams` (``index``): per-language FAISS.
- :class:`DenseRetriever` (``retriever``): ``load(index_dir)``, ``search(questions, k)``.
- :class:`RetrieverTask` (``task``), :func:`build_examples` (``data``): training.
- :func:`retriever_accuracy_table` (``accuracy``): top-k accuracy per language,
  same-language vs cross-lingual, against gold passage ids.
"""
from __future__ import annotations

from xqa.lazy import exports

_EXPORTS = {
    "BiEncoder": ".model", "BiEncoderConfig": ".model", "SIZES": ".model",
    "contrastive_loss": ".loss", "distributed_contrastive_loss": ".loss", "gather_with_grad": ".loss",
    "encode_shard": ".encode", "build_indexes": ".encode", "shard_done": ".encode",
    "LanguageIndexes": ".index", "IndexParams": ".index", "INDEX_TYPES": ".index",
    "DenseRetriever": ".retriever",
    "RetrieverTask": ".task", "TaskConfig": ".task",
    "build_examples": ".data", "Example": ".data",
    "retriever_accuracy_table": ".accuracy", "format_accuracy_table": ".accuracy",
}

__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS)  # each name from its module, on first use
