"""``xqa report mlqa``: retrieval accuracy per language on MLQA dev, same-language pairs
(or, with ``--cross-lingual``, questions in each language over the English contexts).

For each language L, the corpus is every context of L in MLQA dev (all
``dev-context-L-question-*.json`` files, deduplicated by text) and the
questions are those of ``dev-context-L-question-L.json``. Each question's gold
passage is the context it was asked about, so besides top-k answer accuracy
(a passage holds an answer string: :func:`xqa.evaluation.retrieval.has_answer`)
we report recall@k of the gold context.

With ``--cross-lingual`` the corpus is every English context of MLQA dev and
the questions of language L are those of ``dev-context-en-question-L.json``:
the retrieval a cross-lingual question needs. BM25 there is the English index
searched with the question as it is; ``cross-script`` is the romanized index
of :mod:`retriever.sparse.roman`.

The table is computed for a list of *named* retrievers
(:func:`retrieval_table`), so other columns (SPAR's Λ) join by adding a name
and a retriever; BM25 is built here from the corpus.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xqa.records import Passage, Question

MLQA_LANGS = ("ar", "de", "en", "es", "hi", "vi", "zh")
DEFAULT_KS = (1, 5, 20, 100)
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "mlqa" / "dev"


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


def _bm25(data: Mapping[str, MlqaLanguage], work: Path, args: argparse.Namespace) -> Any:
    if getattr(args, "cross_lingual", False):  # the English index, whatever the question's language
        return SearchAs(bm25_retriever(data, work / "bm25-cross", args.rebuild, args.threads), "en")
    return bm25_retriever(data, work / "bm25", args.rebuild, args.threads)


# name -> factory(data, work_dir, args) -> retriever; other columns register here.
RETRIEVERS: dict[str, Callable[[Mapping[str, MlqaLanguage], Path, argparse.Namespace], Any]] = {
    "BM25": _bm25,
    "Λ": lambda data, work, args: _lexical(data, work, args),
    "cross-script": lambda data, work, args: roman_retriever(
        data, work / ("roman-cross" if getattr(args, "cross_lingual", False) else "roman"), args.rebuild, args.threads),
}


def _lexical(data: Mapping[str, MlqaLanguage], work: Path, args: argparse.Namespace) -> Any:
    """SPAR's Λ trained on the MLQA contexts' sentences, BM25 as teacher (``xqa.tools.mlqa_lexical``)."""
    from xqa.tools.mlqa_lexical import lexical_retriever

    teacher = bm25_retriever(data, work / "bm25", False, args.threads)
    try:
        return lexical_retriever(data, work, teacher)
    finally:
        teacher.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="MLQA v1 dev folder (default: shared/data/mlqa/dev beside the repository; "
                             "skipped when absent)")
    parser.add_argument("--langs", default=",".join(MLQA_LANGS),
                        help="comma-separated languages (same-language pairs)")
    parser.add_argument("--ks", default=",".join(map(str, DEFAULT_KS)), help="comma-separated k values")
    parser.add_argument("--cross-lingual", action="store_true",
                        help="questions of each language (but en) over the English contexts "
                             "(dev-context-en-question-L), instead of same-language pairs")
    parser.add_argument("--retrievers", default="BM25",
                        help=f"comma-separated columns to compute, from: {', '.join(RETRIEVERS)}")
    parser.add_argument("--match", default="lang_aware", choices=("dpr", "lang_aware"),
                        help="answer matching: DPR has_answer tokens, or substring for ja/zh/th/km/ko")
    parser.add_argument("--work", default="build/mlqa", metavar="DIR",
                        help="folder for the indexes built from MLQA (reused when complete)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the indexes even when complete")
    parser.add_argument("--threads", type=int, default=2, help="indexing and search threads")
    parser.add_argument("--markdown", default=None, metavar="FILE", help="also write the table to FILE")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write all scores as JSON to FILE")


def _ints(text: str, what: str) -> list[int]:
    from xqa.errors import XqaError

    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise XqaError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise XqaError(f"{what}: expected positive integers, got {text!r}")
    return sorted(set(values))


def run(args: argparse.Namespace) -> int:
    from xqa.artifacts import write_json_atomic, write_text_atomic
    from xqa.errors import XqaError

    data_dir = Path(args.data) if args.data else DEFAULT_DATA
    if not data_dir.is_dir():
        if args.data:
            raise XqaError(f"{data_dir}: no such MLQA folder")
        print(f"xqa report mlqa: skipped: MLQA dev not found at {data_dir} "
              "(pass --data DIR with dev-context-*-question-*.json)", file=sys.stderr)
        return 0
    langs = [x.strip() for x in args.langs.split(",") if x.strip()]
    bad = [x for x in langs if not re.fullmatch(r"[a-z]{2}", x)]
    if bad or not langs:
        raise XqaError(f"--langs: expected two-letter codes like 'en,zh', got {args.langs!r}")
    names = [x.strip() for x in args.retrievers.split(",") if x.strip()]
    unknown = [x for x in names if x not in RETRIEVERS]
    if unknown or not names:
        raise XqaError(f"--retrievers: unknown {unknown or names}; choose from {', '.join(RETRIEVERS)}")
    ks = _ints(args.ks, "--ks")
    if args.cross_lingual and "Λ" in names:
        raise XqaError("--cross-lingual: Λ is trained per language here; compare BM25 and cross-script")
    data = load_mlqa_cross(data_dir, langs) if args.cross_lingual else load_mlqa(data_dir, langs)
    retrievers = {name: RETRIEVERS[name](data, Path(args.work), args) for name in names}
    try:
        scores = retrieval_table(retrievers, data, ks, args.match)
    finally:
        for r in retrievers.values():
            getattr(r, "close", lambda: None)()
    table = markdown_table(scores, data)
    command = "xqa report mlqa " + " ".join(sys.argv[3:]) if sys.argv[1:3] == ["report", "mlqa"] else ""
    print(table)
    if args.markdown:
        write_text_atomic(args.markdown, (f"Made by `{command}`\n\n" if command else "") + table + "\n")
    if args.json:
        write_json_atomic(args.json, {"match": args.match, "data": str(data_dir),
                                      "scores": {n: s.to_dict() for n, s in scores.items()}})
    return 0
