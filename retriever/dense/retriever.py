"""``DenseRetriever``: the query encoder plus the per-language FAISS indexes.

Batch-first (``search(questions, k) -> list[list[Hit]]``), global over all
languages (each language's top-k merged by score, Tu & Padmanabhan 2022, §3.2). The index
folder records which model encoded it, so ``DenseRetriever.load(index_dir)``
finds the encoder by itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from xqa.errors import XqaError
from xqa.records import Hit, Question

from .encode import index_config, resolve_model_dir
from .index import LanguageIndexes


class DenseRetriever:
    """Dense retrieval over a finished ``xqa index dense`` folder."""

    source = "dense"

    def __init__(self, model, indexes: LanguageIndexes, batch_size: int = 128):
        if model is not None and indexes.dim and model.dim != indexes.dim:
            raise XqaError(f"the encoder's vectors have size {model.dim} but the index holds {indexes.dim}")
        self.model = model
        self.indexes = indexes
        self.batch_size = batch_size

    @classmethod
    def load(cls, index_dir: str | Path, model_dir: str | Path | None = None, *,
             languages: Iterable[str] | None = None, device: str = "cpu",
             use_gpu: bool | None = None, batch_size: int = 128) -> "DenseRetriever":
        """Load the indexes (optionally only some ``languages``) and the encoder that built them."""
        from .model import BiEncoder

        cfg = index_config(index_dir)
        mdir = Path(model_dir) if model_dir is not None else resolve_model_dir(index_dir, cfg["model"])
        model = BiEncoder.load(mdir, device=device)
        indexes = LanguageIndexes.load(Path(index_dir) / "index", languages=languages, use_gpu=use_gpu)
        return cls(model, indexes, batch_size=batch_size)

    @property
    def languages(self) -> list[str]:
        return self.indexes.languages

    def encode_queries(self, questions: Sequence[str]) -> np.ndarray:
        """Question vectors ``[n, d]`` float32."""
        return self.model.encode_queries(list(questions), batch_size=self.batch_size)

    def search_vectors(self, q: np.ndarray, k: int) -> list[list[Hit]]:
        """Global top-``k`` for query vectors ``q`` ``[n, d]`` (SPAR passes its own)."""
        return self.indexes.search(q, k, source=self.source)

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Global top-``k`` passages for each question, scores descending, unique ids."""
        if not questions:
            return []
        return self.search_vectors(self.encode_queries([q.question for q in questions]), k)
