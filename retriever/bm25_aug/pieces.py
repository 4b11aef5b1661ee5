"""BM25 over SentencePiece pieces: one Lucene index of every language's passages.

Each passage is indexed as the multilingual-e5 SentencePiece pieces of its
``title\\ntext`` joined by spaces (pre-tokenized, Lucene's white-space
analyzer), so one vocabulary serves every language and a query is any
weighting of pieces. Pieces are case-sensitive strings such as ``"▁Paris"``.

Scores are Lucene's BM25 (``BM25Similarity``, k1 = 0.9, b = 0.4 as elsewhere
in xqa)::

    score(q, d) = Σ_i boost_i · idf_i · tf_i / (tf_i + k1·(1 - b + b·|d|/avgdl))
    idf_i       = log(1 + (N - df_i + 0.5) / (df_i + 0.5))
    avgdl       = (total number of pieces) / N

with |d| rounded as Lucene stores it (one byte per document, exact below 24
pieces: :func:`lucene_length`). :func:`collection_stats` computes the same
quantities in numpy/scipy, which is what training scores with
(Chen & Wiseman 2023, BM25 Query Augmentation Learned End-to-End:
``BM25(q, d) = (v ⊙ bow(q))ᵀ f(d)``).

Layout of an index folder ``OUT``::

    OUT/config.json   kind "pieces_index": tokenizer folder, counts, BM25 parameters, versions
    OUT/langs.json    {passage id: language}, so that hits carry their passage's language
    OUT/lucene/       the Lucene index (Anserini's JsonCollection fields)
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retriever.base import check_k
from xqa.artifacts import atomic_dir, folder_ref, is_complete, load_config, load_finished, resolve_ref, save_config
from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

KIND = "pieces_index"
SOURCE = "pieces"
LUCENE_SUBDIR = "lucene"
FIELD = "contents"
DEFAULT_K1, DEFAULT_B = 0.9, 0.4
MAX_QUERY_TERMS = 1 << 16


# ----------------------------------------------------------------------------- pieces


def load_tokenizer(encoder_dir: str | Path):
    """The (fast) tokenizer of an encoder folder."""
    from transformers import AutoTokenizer

    folder = Path(encoder_dir)
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json").is_file():
        raise XqaError(f"{folder}: no tokenizer (tokenizer.json) in this encoder folder")
    return AutoTokenizer.from_pretrained(str(folder))


def indexable(piece: str) -> bool:
    """Can ``piece`` be one term of a white-space-analyzed index (non-empty, no white space)?"""
    return bool(piece) and not any(ch.isspace() for ch in piece)


def piece_ids(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Vocabulary ids of each text's pieces (no special tokens, no truncation), leaving out
    pieces that cannot be an index term (:func:`indexable`)."""
    if not texts:
        return []
    enc = tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    ok = _indexable_ids(tokenizer)
    return [[i for i in ids if ok(i)] for ids in enc]


def _indexable_ids(tokenizer):
    cache: dict[int, bool] = {}
    special = set(tokenizer.all_special_ids)

    def ok(i: int) -> bool:
        if i not in cache:
            cache[i] = i not in special and indexable(tokenizer.convert_ids_to_tokens(i))
        return cache[i]

    return ok


def pieces_of(tokenizer, texts: Sequence[str]) -> list[list[str]]:
    """Each text's pieces as strings (what the index holds)."""
    return [tokenizer.convert_ids_to_tokens(ids) for ids in piece_ids(tokenizer, texts)]


# ----------------------------------------------------------------------------- Lucene's BM25 in numpy


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_FREE = 255 - _long_to_int4(2 ** 31 - 1)  # Lucene's SmallFloat.NUM_FREE_VALUES (24)


def lucene_length(n: int) -> int:
    """The document length Lucene's BM25 uses for ``n`` terms: ``SmallFloat.byte4ToInt(intToByte4(n))``
    (exact below 24, then 4 significant bits)."""
    if n < _FREE:
        return int(n)
    return _FREE + _int4_to_long(_long_to_int4(n - _FREE))


def idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's BM25 idf: ``log(1 + (N - df + 0.5) / (df + 0.5))`` (float32)."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


class CollectionStats:
    """BM25 statistics of a collection over a piece vocabulary of size ``vocab_size``.

    ``df`` ``[V]`` document frequencies, ``n_docs``, ``avgdl``, ``idf`` ``[V]``
    (Lucene's), ``tf_weights``: a scipy CSR matrix ``[n_docs, V]`` of the BM25
    term weights ``f(d)_i = tf/(tf + k1(1 - b + b·|d|/avgdl))`` (Lucene's form,
    without the ``k1 + 1`` factor), one row per document in the order given.
    """

    def __init__(self, docs: Sequence[Sequence[int]], vocab_size: int, k1: float = DEFAULT_K1,
                 b: float = DEFAULT_B):
        from scipy import sparse

        self.vocab_size, self.k1, self.b = int(vocab_size), float(k1), float(b)
        self.n_docs = len(docs)
        if not self.n_docs:
            raise XqaError("no documents to compute BM25 statistics over")
        lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=self.n_docs)
        self.avgdl = float(lengths.sum()) / self.n_docs
        rows, cols, tfs = [], [], []
        for r, d in enumerate(docs):
            counts = Counter(d)
            rows.append(np.full(len(counts), r, dtype=np.int64))
            cols.append(np.fromiter(counts.keys(), dtype=np.int64, count=len(counts)))
            tfs.append(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        row, col, tf = np.concatenate(rows), np.concatenate(cols), np.concatenate(tfs)
        if col.size and (col.max() >= self.vocab_size or col.min() < 0):
            raise XqaError(f"a piece id outside the vocabulary of {self.vocab_size}")
        self.df = np.bincount(col, minlength=self.vocab_size).astype(np.int64)
        self.idf = idf(self.df, self.n_docs)
        qlen = np.array([lucene_length(int(n)) for n in lengths], dtype=np.float64)
        norm = self.k1 * (1 - self.b + self.b * qlen / self.avgdl) if self.avgdl > 0 else np.zeros_like(qlen)
        weights = tf / (tf + norm[row])
        self.tf_weights = sparse.csr_matrix((weights.astype(np.float32), (row, col)),
                                            shape=(self.n_docs, self.vocab_size))
        self.tf_weights.sort_indices()

    def bm25(self, query: np.ndarray) -> np.ndarray:
        """Scores ``[n_queries, n_docs]`` of dense query term weights ``[n_queries, V]`` (boosts):
        ``(query ⊙ idf)ᵀ f(d)`` for every document."""
        q = np.atleast_2d(np.asarray(query, dtype=np.float32)) * self.idf[None, :]
        return np.asarray(self.tf_weights @ q.T).T


# ----------------------------------------------------------------------------- the index


def _has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file()


def _batches(items: Iterable[Passage], size: int) -> Iterator[list[Passage]]:
    batch: list[Passage] = []
    for p in items:
        batch.append(p)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def build_pieces_index(passages: Iterable[Passage], encoder_dir: str | Path, out_dir: str | Path, *,
                       threads: int = 1, progress: bool = True, overwrite: bool = False,
                       batch_size: int = 1000) -> dict:
    """Index every passage's e5 pieces into one Lucene index at ``out_dir``; returns its config.

    Written atomically: ``out_dir`` appears complete (with ``config.json``) or not at all.
    """
    from tqdm import tqdm

    from retriever.sparse.java import anserini_version, jclass, lucene_version

    out = Path(out_dir)
    if out.exists() and is_complete(out) and not overwrite:
        raise FileExistsError(f"{out} is a finished pieces index; pass --overwrite (overwrite=True) to rebuild")
    if out.exists() and is_complete(out) and load_config(out).get("kind") != KIND:
        raise FileExistsError(f"{out} holds an artifact of kind {load_config(out).get('kind')!r}; "
                              "refusing to replace it")
    if out.exists() and (not out.is_dir() or (not is_complete(out) and any(out.iterdir()))):
        raise FileExistsError(f"{out} exists and is not a pieces index; choose another --out")
    tokenizer = load_tokenizer(encoder_dir)
    langs: dict[str, str] = {}
    languages: Counter = Counter()
    total_pieces = 0
    with atomic_dir(out, overwrite=True) as tmp:
        lucene_dir = tmp / LUCENE_SUBDIR
        indexer = jclass("io.anserini.index.SimpleIndexer")(
            ["-index", str(lucene_dir), "-input", "", "-collection", "JsonCollection",
             "-threads", str(max(1, threads)), "-pretokenized"])
        added = 0
        bar = tqdm(desc="indexing pieces", unit=" passages", disable=not progress)
        try:
            n = 0
            for batch in _batches(passages, batch_size):
                lines = []
                for p, pieces in zip(batch, pieces_of(tokenizer, [p.contents() for p in batch])):
                    n += 1
                    if not p.lang:
                        raise XqaError(f"passage #{n} (id {p.id!r}) has no language ('lang')")
                    if p.id in langs:
                        raise XqaError(f"passage #{n}: duplicate passage id {p.id!r}")
                    langs[p.id] = p.lang
                    languages[p.lang] += 1
                    total_pieces += len(pieces)
                    lines.append(json.dumps({"id": p.id, FIELD: " ".join(pieces)}, ensure_ascii=False))
                added += int(indexer.addRawDocuments(lines))
                bar.update(len(batch))
        except BaseException:
            indexer.close(False)
            raise
        finally:
            bar.close()
        indexer.close(True)
        if not langs:
            raise XqaError("no passages to index")
        if added != len(langs):
            raise XqaError(f"pieces index: {len(langs)} passages given, {added} accepted (see Anserini's log)")
        with open(tmp / "langs.json", "w", encoding="utf-8") as f:
            json.dump(langs, f, ensure_ascii=False)
        config = {
            "tokenizer": folder_ref(Path(encoder_dir), out),
            "passages": len(langs),
            "pieces": total_pieces,
            "languages": dict(sorted(languages.items())),
            "bm25": {"k1": DEFAULT_K1, "b": DEFAULT_B},
            "index_bytes": sum(p.stat().st_size for p in lucene_dir.rglob("*") if p.is_file()),
            "anserini": anserini_version(),
            "lucene": lucene_version(),
        }
        save_config(tmp, KIND, config)
    return load_config(out, KIND)


class PiecesRetriever:
    """BM25 over the pieces index: ``search(questions, k)`` (the question's pieces, each boosted by
    its count) and ``search_weighted(queries, k)`` (any ``{piece: boost}``).

    Lucene multiplies each term's BM25 score (idf included) by its boost, so
    a weighted query scores ``Σ_i boost_i · idf_i · f(d)_i``.
    """

    source = SOURCE

    def __init__(self, folder: Path, config: dict[str, Any], searcher, tokenizer, langs: dict[str, str],
                 k1: float, b: float):
        self.folder, self.config, self.searcher = folder, config, searcher
        self.tokenizer, self.langs, self.k1, self.b = tokenizer, langs, k1, b

    @classmethod
    def load(cls, folder: str | Path, k1: float | None = None, b: float | None = None) -> PiecesRetriever:
        """Open ``xqa index pieces``'s folder (the Java VM starts here)."""
        from retriever.sparse import analyzers
        from retriever.sparse.java import ensure_jvm, jclass

        folder = Path(folder)
        config = load_finished(folder, KIND, "pieces index (run `xqa index pieces`)")
        tokenizer = load_tokenizer(resolve_ref(folder, config["tokenizer"], "tokenizer folder", exists=_has_tokenizer))
        with open(folder / "langs.json", encoding="utf-8") as f:
            langs = json.load(f)
        ensure_jvm()
        index_searcher = jclass("org.apache.lucene.search.IndexSearcher")
        if index_searcher.getMaxClauseCount() < MAX_QUERY_TERMS:
            index_searcher.setMaxClauseCount(MAX_QUERY_TERMS)
        bm25 = config.get("bm25", {})
        k1 = float(bm25.get("k1", DEFAULT_K1) if k1 is None else k1)
        b = float(bm25.get("b", DEFAULT_B) if b is None else b)
        searcher = jclass("io.anserini.search.SimpleSearcher")(str(folder / LUCENE_SUBDIR))
        searcher.set_bm25(k1, b)
        searcher.set_analyzer(analyzers.whitespace_analyzer())
        return cls(folder, config, searcher, tokenizer, langs, k1, b)

    def query_pieces(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """``{piece: count}`` of each text: the plain BM25 query (bow(q))."""
        return [{p: float(c) for p, c in Counter(ps).items()} for ps in pieces_of(self.tokenizer, texts)]

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Top-``k`` passages per question by BM25 over its pieces (every language at once)."""
        k = check_k(k)
        return self.search_weighted(self.query_pieces([q.question for q in questions]), k)

    def search_weighted(self, queries: Sequence[dict[str, float]], k: int, source: str | None = None) -> list[list[Hit]]:
        """Top-``k`` passages per ``{piece: boost}`` query: ``Σ_i boost_i · BM25_i(d)``. Pieces with
        a boost that is not a positive finite number, or that cannot be an index term, are left out;
        an empty query gets ``[]``."""
        from retriever.sparse.java import jclass

        k = check_k(k)
        source = source or self.source
        out: list[list[Hit]] = []
        if k == 0:
            return [[] for _ in queries]
        builder_cls = jclass("org.apache.lucene.search.BooleanQuery$Builder")
        should = jclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
        boost_query = jclass("org.apache.lucene.search.BoostQuery")
        term_query = jclass("org.apache.lucene.search.TermQuery")
        term = jclass("org.apache.lucene.index.Term")
        for weights in queries:
            builder = builder_cls()
            clauses = 0
            for piece, boost in weights.items():
                boost = float(boost)
                if not (boost > 0 and math.isfinite(boost)) or not indexable(piece):
                    continue
                builder.add(boost_query(term_query(term(FIELD, piece)), boost), should)
                clauses += 1
            if not clauses:
                out.append([])
                continue
            try:
                found = self.searcher.search(builder.build(), int(k))
            except Exception as e:
                raise XqaError(f"BM25 search in the pieces index {self.folder} failed: {e}") from e
            out.append(self._hits(found, k, source))
        return out

    def _hits(self, scored_docs: Any, k: int, source: str) -> list[Hit]:
        from retriever.sparse.searcher import to_hits

        return to_hits(scored_docs, self.langs, k, source)

    def close(self) -> None:
        """Release the Lucene reader."""
        self.searcher.close()


__all__ = ["KIND", "SOURCE", "CollectionStats", "PiecesRetriever", "build_pieces_index", "idf", "indexable",
           "load_tokenizer", "lucene_length", "piece_ids", "pieces_of"]
