"""MLQA dev as retrieval tasks, scored per language (the library of ``xqa report mlqa``).

For each language L, :func:`load_mlqa` makes the corpus of every context of L
in MLQA dev (all ``dev-context-L-question-*.json`` files, deduplicated by text)
and the questions of ``dev-context-L-question-L.json``. Each question's gold
passage is the context it was asked about, so besides top-k answer accuracy
(a passage holds an answer string: :func:`xqa.evaluation.retrieval.has_answer`)
:func:`retrieval_table` reports recall@k of the gold context.

:func:`load_mlqa_cross` makes the cross-lingual task: the corpus is every
English context of MLQA dev and the questions of language L are those of
``dev-context-en-question-L.json``. BM25 there is the English index searched
with the question as it is (:class:`SearchAs`); the cross-script index
(:func:`roman_retriever`) is that of :mod:`retriever.sparse.roman`.

The table is computed for a list of *named* retrievers, so other columns
(SPAR's Λ, :mod:`xqa.tools.lib.mlqa_lexical`) join by adding a name and a retriever.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xqa.records import Passage, Question

MLQA_LANGS = ("ar", "de", "en", "es", "hi", "vi", "zh")
DEFAULT_KS = (1, 5, 20, 100)



@dataclass
class MlqaLanguage:
    """One language's retrieval task: its deduplicated contexts and same-language questions."""

    lang: str
    passages: list[Passage]
    questions: list[Question]  # meta["positive_ids"] = [gold passage id]


def load_mlqa(data_dir: str | Path, langs: Sequence[str] = MLQA_LANGS) -> dict[str, MlqaLanguage]:
    """Read MLQA dev for ``langs`` (see the module docstring for corpus and gold passages)."""
    from xqa.errors import XqaError
    from xqa.io import read_squad

    data_dir = Path(data_dir)
    out = {}
    for lang in langs:
        same = data_dir / f"dev-context-{lang}-question-{lang}.json"
        if not same.is_file():
            raise XqaError(f"{same}: missing (is {data_dir} MLQA v1 dev?)")
        files = [same] + sorted(p for p in data_dir.glob(f"dev-context-{lang}-question-*.json") if p != same)
        canonical: dict[str, str] = {}  # context text -> our passage id
        passages: list[Passage] = []
        questions: list[Question] = []
        for path in files:
            qs, ps = read_squad(path, lang=lang)
            file_ids = {}
            for p in ps:
                if p.text not in canonical:
                    canonical[p.text] = f"mlqa-{lang}-{len(passages)}"
                    passages.append(Passage(canonical[p.text], p.title, p.text, lang))
                file_ids[p.id] = canonical[p.text]
            if path == same:
                questions = [Question(q.id, q.question, lang, q.answers,
                                      meta={"positive_ids": [file_ids[i] for i in q.meta["positive_ids"]]})
                             for q in qs]
        out[lang] = MlqaLanguage(lang, passages, questions)
    return out


def load_mlqa_cross(data_dir: str | Path, langs: Sequence[str], context: str = "en") -> dict[str, MlqaLanguage]:
    """Questions in each of ``langs`` (but ``context``) over the contexts of ``context``: one shared corpus."""
    from xqa.errors import XqaError
    from xqa.io import read_squad

    corpus = load_mlqa(data_dir, [context])[context].passages
    by_text = {p.text: p.id for p in corpus}
    out = {}
    for lang in langs:
        if lang == context:
            continue
        path = Path(data_dir) / f"dev-context-{context}-question-{lang}.json"
        if not path.is_file():
            raise XqaError(f"{path}: missing (is {data_dir} MLQA v1 dev?)")
        qs, ps = read_squad(path, lang=lang)
        ids = {p.id: by_text[p.text] for p in ps}
        out[lang] = MlqaLanguage(lang, corpus, [
            Question(q.id, q.question, lang, q.answers, meta={"positive_ids": [ids[i] for i in q.meta["positive_ids"]]})
            for q in qs])
    if not out:
        raise XqaError(f"--cross-lingual needs question languages other than {context!r}")
    return out


class SearchAs:
    """Search every question as if it were in ``lang``: one monolingual index for questions of any language."""

    def __init__(self, retriever: Any, lang: str):
        self.retriever, self.lang = retriever, lang

    def search(self, questions: Sequence[Question], k: int) -> list:
        from dataclasses import replace

        return self.retriever.search([replace(q, lang=self.lang) for q in questions], k)

    def close(self) -> None:
        getattr(self.retriever, "close", lambda: None)()


def result_records(questions: Sequence[Question], hits: Sequence[Sequence[Any]],
                   passages: Mapping[str, Passage]) -> list[dict[str, Any]]:
    """DPR-layout result dicts (``ctxs`` with text), as :mod:`xqa.evaluation.retrieval` scores them."""
    records = []
    for q, hs in zip(questions, hits):
        ctxs = [{"id": h.id, "title": passages[h.id].title, "text": passages[h.id].text,
                 "lang": passages[h.id].lang, "score": h.score, "source": h.source} for h in hs]
        records.append({**q.to_dict(), "ctxs": ctxs})
    return records


def retrieval_table(retrievers: Mapping[str, Any], data: Mapping[str, MlqaLanguage],
                    ks: Sequence[int] = DEFAULT_KS, mode: str = "lang_aware") -> dict[str, Any]:
    """Scores of each named retriever on every language: ``{name: RetrievalScores}``.

    A retriever is anything with ``search(questions, k) -> list[list[Hit]]``
    that can search each language's corpus (BM25 routes by question language).
    """
    from xqa.evaluation.retrieval import score_retrieval

    passages = {p.id: p for d in data.values() for p in d.passages}
    questions = [q for d in data.values() for q in d.questions]
    scores = {}
    for name, retriever in retrievers.items():
        hits = retriever.search(questions, max(ks))
        scores[name] = score_retrieval(result_records(questions, hits, passages), ks, mode)
    return scores


def markdown_table(scores: Mapping[str, Any], data: Mapping[str, MlqaLanguage]) -> str:
    """One row per (language, retriever): top-k accuracy and recall@k of the gold context."""
    first = next(iter(scores.values()))
    ks = first.ks
    header = (["lang", "questions", "passages", "retriever"] + [f"top-{k}" for k in ks]
              + [f"R@{k}" for k in ks])
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * 2 * len(ks)) + "|"]

    def row(lang: str, nq: int, np_: int, name: str, topk: Mapping[int, float],
            recall: Mapping[int, float]) -> str:
        cells = [lang, str(nq), str(np_), name] + [f"{topk[k]:.1f}" for k in ks] + \
                [f"{recall[k]:.1f}" if recall else "–" for k in ks]
        return "| " + " | ".join(cells) + " |"

    for lang, d in data.items():
        for name, s in scores.items():
            one = s.per_language[lang]
            lines.append(row(lang, len(d.questions), len(d.passages), name, one.topk, one.recall))
    for name, s in scores.items():
        langs = list(s.per_language.values())
        macro_recall = {k: sum(x.recall.get(k, 0.0) for x in langs) / len(langs) for k in ks}
        n_passages = len({p.id for d in data.values() for p in d.passages})
        lines.append(row("**macro**", s.all.n, n_passages, name,
                         s.macro_topk, macro_recall))
    return "\n".join(lines)


def bm25_retriever(data: Mapping[str, MlqaLanguage], folder: Path, rebuild: bool, threads: int) -> Any:
    """Build (or reuse) BM25 indexes of the MLQA corpora in ``folder``; return the retriever."""
    from retriever.sparse import SparseRetriever, build_sparse_indexes
    from xqa.artifacts import is_complete, load_config

    wanted = set(data)
    if is_complete(folder) and not rebuild:
        have = set(load_config(folder).get("languages", {}))
        rebuild = have != wanted
    if rebuild or not is_complete(folder):
        passages = {p.id: p for d in data.values() for p in d.passages}  # --cross-lingual: one shared corpus
        build_sparse_indexes(passages.values(), folder, threads=threads, overwrite=True)
    return SparseRetriever.load(folder, threads=threads)


def roman_retriever(data: Mapping[str, MlqaLanguage], folder: Path, rebuild: bool, threads: int) -> Any:
    """Build (or reuse) the cross-script index of all the MLQA corpora in ``folder``."""
    from retriever.sparse import SparseRetriever, build_sparse_indexes
    from xqa.artifacts import is_complete, load_config

    passages = {p.id: p for d in data.values() for p in d.passages}
    if is_complete(folder) and not rebuild:
        rebuild = load_config(folder).get("num_passages") != len(passages)
    if rebuild or not is_complete(folder):
        build_sparse_indexes(passages.values(), folder, threads=threads, overwrite=True, cross_script=True)
    return SparseRetriever.load(folder, threads=threads)
