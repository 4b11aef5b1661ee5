"""Batch BM25 search over the per-language Lucene indexes built by :mod:`.index`.

Each question is searched in the index of its own language only (Tu & Padmanabhan 2022, the MIA 2022 system:
the sparse list comes from the question language's BM25 index). Questions are
grouped by language and each group goes to Anserini's multi-threaded
``SimpleSearcher.batch_search`` in one call. That is the Java method Pyserini's
``LuceneSearcher.batch_search`` forwards to; calling it directly through
pyjnius gives the same hits (``tests/test_sparse.py`` checks this against
Pyserini) without the ~8 s import of Pyserini's Python side.

A cross-script index (``xqa index sparse --cross-script``) holds one index of
every language, romanized; every question is searched there, whatever its
language, and its hits carry ``source="roman"`` and the passage's language
left blank (the index does not record it).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from retriever.base import check_k
from retriever.sparse import analyzers, roman
from retriever.sparse.index import DEFAULT_B, DEFAULT_K1, KIND, LANG_KIND, LUCENE_SUBDIR
from retriever.sparse.java import ensure_jvm, jclass
from xqa.artifacts import is_complete, load_config
from xqa.errors import XqaError
from xqa.records import UNKNOWN_LANG, Hit, Question

SOURCE = "sparse"
CROSS_SCRIPT_SOURCE = "roman"
# Lucene refuses queries with more than 1,024 distinct terms, and one such
# question makes Anserini fail its whole batch; long questions (or a passage
# used as a query) are legitimate here, so raise the VM-wide limit.
MAX_QUERY_TERMS = 1 << 16


class _LanguageIndex:
    """One language's Lucene searcher with the analyzer its index was built with."""

    def __init__(self, lang: str, folder: Path, k1: float, b: float):
        config = load_config(folder, LANG_KIND)
        self.lang = lang
        self.config = config
        cross = lang == roman.ALL
        self.hit_lang, self.source = ("", CROSS_SCRIPT_SOURCE) if cross else (lang, SOURCE)
        self.pretokenized = bool(config["pretokenized"])
        # cross-script index: each language's frequent tokens, left out of its questions' queries
        self.stop_tokens = {k: frozenset(v) for k, v in config.get("stop_tokens", {}).items()}
        try:
            analyzer = analyzers.build_analyzer(config["analyzer"])
        except (RuntimeError, ValueError) as e:
            raise XqaError(f"{folder}: cannot rebuild analyzer {config['analyzer']!r}: {e}; "
                           "rebuild the index with this Java (xqa index sparse --overwrite)") from e
        self.searcher = jclass("io.anserini.search.SimpleSearcher")(str(folder / LUCENE_SUBDIR))
        self.searcher.set_bm25(float(k1), float(b))
        if self.pretokenized:
            # Passages were analyzed by xqa and indexed as white-space tokens; do the same to queries.
            self.query_analyzer = analyzer
            self.searcher.set_analyzer(analyzers.whitespace_analyzer())
        else:
            self.query_analyzer = None
            self.searcher.set_analyzer(analyzer)

    def stop_set(self, lang: str | None) -> frozenset[str]:
        """The stop tokens of questions in ``lang`` (its base language's for ``zh_cn``; none if unknown)."""
        if not self.stop_tokens or not lang:
            return frozenset()
        if lang not in self.stop_tokens:
            try:
                lang = analyzers.base_language(lang)
            except ValueError:
                return frozenset()
        return self.stop_tokens.get(lang, frozenset())

    def query_string(self, text: str, lang: str | None = None) -> str:
        """The query Lucene gets for ``text``: analyzed by xqa for a pre-tokenized index, less the stop
        tokens of ``lang`` (cross-script index), unless that would leave nothing."""
        if self.query_analyzer is None:
            return text
        tokens = analyzers.analyze(self.query_analyzer, text)
        stop = self.stop_set(lang)
        kept = [t for t in tokens if t not in stop]
        return " ".join(kept or tokens)

    def batch_search(self, texts: list[str], k: int, threads: int, lang: str | None = None) -> list[list[Hit]]:
        """Hits for each text (questions in ``lang``), in order; blank (or all-stop-word) texts get []."""
        array_list = jclass("java.util.ArrayList")
        queries, qids = array_list(), array_list()
        positions = []
        for i, text in enumerate(texts):
            q = self.query_string(text, lang) if text.strip() else ""
            if q.strip():
                queries.add(q)
                qids.add(str(i))
                positions.append(i)
        out: list[list[Hit]] = [[] for _ in texts]
        if not positions:
            return out
        try:
            results = self.searcher.batch_search(queries, qids, int(k), int(threads))
        except Exception as e:  # a JavaException: say which batch, keep Lucene's reason
            raise XqaError(f"BM25 search in the {self.lang!r} index failed: {e}") from e
        for i in positions:
            out[i] = to_hits(results.get(str(i)) or [], self.hit_lang, k, self.source)
        return out

    def close(self) -> None:
        self.searcher.close()


def to_hits(scored_docs: Any, lang: str | Mapping[str, str], k: int, source: str = SOURCE) -> list[Hit]:
    """Anserini ``ScoredDoc[]`` → hits sorted by score (desc), unique ids, at most ``k``; ``lang``:
    every hit's language, or a map from passage id to its language."""
    hits, seen = [], set()
    for d in scored_docs:
        docid = d.docid
        if docid in seen:
            continue
        seen.add(docid)
        hits.append(Hit(id=docid, score=float(d.score), source=source,
                        lang=lang if isinstance(lang, str) else lang.get(docid, "")))
    hits.sort(key=lambda h: -h.score)  # stable: keeps Anserini's docid tie-break
    return hits[:k]


class SparseRetriever:
    """BM25 over per-language Lucene indexes: ``search(questions, k) -> list[list[Hit]]``.

    Load with :meth:`load`; the Java VM starts then (not at import). A question
    whose language has no index raises :class:`XqaError`, gets ``[]`` with
    ``missing="empty"`` (an empty sparse list makes Sparse-Corroborate-Dense
    return the dense list), or, with ``missing="script"`` (what the fused
    retrievers and the pipeline ask for), is searched as one of unknown
    language. A question whose language is unknown (``lang`` "und",
    :data:`xqa.records.UNKNOWN_LANG`) is searched in the index of every
    language written in its script.
    """

    source = SOURCE
    script_search = True   # takes missing="script" (retriever.combined.sparse_search)

    def __init__(self, folder: Path, config: dict[str, Any], indexes: dict[str, _LanguageIndex],
                 threads: int):
        self.folder = folder
        self.config = config
        self._indexes = indexes
        self.threads = threads
        self.cross_script = bool(config.get("cross_script")) and roman.ALL in indexes
        if self.cross_script:
            self.source = CROSS_SCRIPT_SOURCE

    @classmethod
    def load(cls, folder: str | Path, threads: int | None = None, k1: float | None = None,
             b: float | None = None) -> SparseRetriever:
        """Open every language's index in ``folder`` (made by ``build_sparse_indexes``).

        ``threads``: search threads per batch (default: CPU count). ``k1``/``b``
        override the BM25 parameters recorded in the index (Anserini's 0.9/0.4).
        """
        folder = Path(folder)
        if not is_complete(folder):
            hint = " (an interrupted build? rerun xqa index sparse)" if folder.exists() else ""
            raise XqaError(f"{folder}: not a BM25 index folder (no config.json){hint}")
        try:
            config = load_config(folder, KIND)
        except ValueError as e:
            raise XqaError(str(e)) from None
        ensure_jvm()
        index_searcher = jclass("org.apache.lucene.search.IndexSearcher")
        if index_searcher.getMaxClauseCount() < MAX_QUERY_TERMS:
            index_searcher.setMaxClauseCount(MAX_QUERY_TERMS)
        bm25 = config.get("bm25", {})
        k1 = bm25.get("k1", DEFAULT_K1) if k1 is None else k1
        b = bm25.get("b", DEFAULT_B) if b is None else b
        indexes = {}
        try:
            for lang in sorted(config["languages"]):
                indexes[lang] = _LanguageIndex(lang, folder / lang, k1, b)
        except BaseException:
            for index in indexes.values():
                index.close()
            raise
        return cls(folder, config, indexes, threads or os.cpu_count() or 1)

    @property
    def languages(self) -> list[str]:
        """Languages with an index, sorted."""
        return sorted(self._indexes)

    def index_language(self, lang: str) -> str | None:
        """The index a question in ``lang`` is searched in: ``lang`` itself, else the code that
        stands in for it (:func:`xqa.langid.codes.resolve_language`: Malay ↔ Indonesian, ``zh`` →
        ``zh_cn``), else its base language (``zh_cn`` questions → a ``zh`` index), else None. A
        cross-script index answers every language from its one index."""
        if self.cross_script:
            return roman.ALL
        if lang in self._indexes:
            return lang
        from xqa.langid.codes import resolve_language

        alias = resolve_language(lang, self._indexes)
        if alias in self._indexes:
            return alias
        try:
            base = analyzers.base_language(lang)
        except ValueError:
            return None
        return base if base in self._indexes else None

    def analyzer(self, lang: str) -> str:
        """The recorded analyzer name for ``lang`` (e.g. ``"anserini:ja"``)."""
        return self._indexes[lang].config["analyzer"]

    def search(self, questions: Sequence[Question], k: int,
               missing: Literal["error", "empty", "script"] = "error") -> list[list[Hit]]:
        """Top-``k`` BM25 hits per question from its language's index, in question order. A
        question in a language without an index: an error, ``[]`` (``missing="empty"``) or the
        hits of the indexes of its script, as a question of unknown language gets them
        (``"script"``)."""
        if missing not in ("error", "empty", "script"):
            raise ValueError(f"missing must be 'error', 'empty' or 'script', not {missing!r}")
        k = check_k(k)
        by_lang: dict[str, list[int]] = {}
        for i, q in enumerate(questions):
            by_lang.setdefault(q.lang, []).append(i)
        targets = {lang: self.index_language(lang) for lang in by_lang}
        unknown = sorted(lang for lang, target in targets.items() if target is None and lang != UNKNOWN_LANG)
        if unknown and missing == "error":
            first = questions[by_lang[unknown[0]][0]]
            raise XqaError(f"no BM25 index for language {unknown[0]!r} (question {first.id!r}) in "
                           f"{self.folder}; it has {', '.join(self.languages)}")
        out: list[list[Hit]] = [[] for _ in questions]
        if k == 0:
            return out
        for lang, positions in by_lang.items():
            target = targets[lang]
            texts = [questions[i].question for i in positions]
            if not self.cross_script and (lang == UNKNOWN_LANG or (target is None and missing == "script")):
                found = self._search_by_script(texts, k)
            elif target is not None:
                found = self._indexes[target].batch_search(texts, k, self.threads, lang)
            else:
                continue
            for i, hits in zip(positions, found):
                out[i] = hits
        return out

    def _search_by_script(self, texts: list[str], k: int) -> list[list[Hit]]:
        """Questions of unidentified language (``lang`` "und"): each searched in the index of every
        language written in the question's script (:func:`xqa.langid.rules.script_languages`; a
        text without letters in every index; the index of passages whose language is not
        identified, ``und``, always), with that index's analyzer; the hits merged by BM25 score,
        each keeping its index's language.
        BM25 scores of different indexes are comparable only where the question's words are the
        index's own: in an index of another script the few words of the question's script (the
        English names a Thai or Hindi paragraph quotes) are rare, their IDF high, and their stray
        matches outscore the right language's. A question whose script no index is written in
        gets no BM25 hits."""
        from xqa.langid.rules import script_languages

        reached = [set(script_languages(text, self._indexes)) for text in texts]
        merged: list[list[Hit]] = [[] for _ in texts]
        for lang, index in self._indexes.items():
            rows = [i for i, languages in enumerate(reached) if lang in languages]
            if not rows:
                continue
            for i, hits in zip(rows, index.batch_search([texts[i] for i in rows], k, self.threads)):
                merged[i].extend(hits)
        return [sorted(row, key=lambda h: -h.score)[:k] for row in merged]

    def close(self) -> None:
        """Release the Lucene readers."""
        for index in self._indexes.values():
            index.close()
        self._indexes = {}

    def __enter__(self) -> SparseRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
