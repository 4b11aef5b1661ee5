"""Λ on its own: an index of Λ passage vectors and a retriever over it.

Inside SPAR, Λ is the second half of the concatenated index
(``SparRetriever.part("lexical")``). This module serves Λ where no dense
retriever exists, e.g. Λ trained on MLQA contexts and compared with BM25 on
MLQA questions. With ``same_language`` a question searches only its own
language's passages, as BM25 does (a like-for-like comparison).

Layout: ``config.json`` (kind ``lexical_index``, the model path) and
``index/`` (a ``LanguageIndexes`` folder).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from retriever.base import check_k
from xqa.artifacts import atomic_dir, folder_ref, load_finished, resolve_ref, save_config
from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

KIND = "lexical_index"


def build_lexical_index(model_dir: str | Path, passages: Iterable[Passage], out_dir: str | Path, *,
                        batch_size: int = 64, device: str = "cpu", progress: bool = True) -> Path:
    """Encode ``passages`` with Λ and write a flat per-language index to ``out_dir`` (atomic)."""
    import numpy as np

    from retriever.dense.index import IndexParams, LanguageIndexes
    from retriever.dense.model import BiEncoder

    from .index import model_folder

    mdir = model_folder(model_dir)
    model = BiEncoder.load(mdir, device=device)
    by_lang: dict[str, list[Passage]] = {}
    for p in passages:
        by_lang.setdefault(p.lang, []).append(p)
    if not by_lang:
        raise XqaError("no passages to index")
    groups = {}
    for lang, ps in sorted(by_lang.items()):
        vec = model.encode_passages(ps, batch_size=batch_size, progress=progress)
        groups[lang] = (np.asarray(vec, dtype=np.float32), [p.id for p in ps])
    indexes = LanguageIndexes.build(groups, IndexParams(kind="flat"))
    out = Path(out_dir)
    with atomic_dir(out, overwrite=True) as tmp:
        indexes.save(tmp / "index")
        save_config(tmp, KIND, {"model": folder_ref(mdir, out), "dim": indexes.dim, "passages": len(indexes),
                                "languages": {k: len(v) for k, v in indexes.ids.items()}})
    return out


class LexicalRetriever:
    """Λ search over a :func:`build_lexical_index` folder (``source="lexical"``)."""

    source = "lexical"

    def __init__(self, model, indexes, same_language: bool = False, batch_size: int = 128):
        self.model, self.indexes = model, indexes
        self.same_language, self.batch_size = same_language, batch_size

    @classmethod
    def load(cls, folder: str | Path, *, same_language: bool = False, device: str = "cpu") -> LexicalRetriever:
        from retriever.dense.index import LanguageIndexes
        from retriever.dense.model import BiEncoder


        folder = Path(folder)
        cfg = load_finished(folder, KIND, "Λ index")
        model = BiEncoder.load(resolve_ref(folder, cfg["model"], "Λ encoder"), device=device)
        return cls(model, LanguageIndexes.load(folder / "index", use_gpu=False), same_language)

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Top-``k`` by Λ: globally, or in each question's language with ``same_language``."""
        k = check_k(k)
        if not questions:
            return []
        q = self.model.encode_queries([x.question for x in questions], batch_size=self.batch_size)
        if not self.same_language:
            return self.indexes.search(q, k, source=self.source)
        out: list[list[Hit]] = [[] for _ in questions]
        by_lang: dict[str, list[int]] = {}
        for i, x in enumerate(questions):
            by_lang.setdefault(x.lang, []).append(i)
        for lang, rows in by_lang.items():
            index = self.indexes.indexes.get(lang)
            if index is None:
                continue
            kk = min(k, len(self.indexes.ids[lang]))
            scores, found = index.search(q[rows], kk)  # [n, kk]
            for r, i in enumerate(rows):
                out[i] = [Hit(self.indexes.ids[lang][j], float(s), self.source, lang)
                          for s, j in zip(scores[r], found[r]) if j >= 0]
        return out


__all__ = ["KIND", "LexicalRetriever", "build_lexical_index"]
