"""Shared by the fusion commands (tune alpha/mu, diagnose lexical, report retrieval, bench fusion).

- where the retrievers come from: a pipeline config (``--config``) and/or
  explicit folders (``--bm25``, ``--dense``, ``--spar``, ``--roman``, ``--passages``);
- how a ranked list is judged: a passage is relevant to a question when it
  holds one of its answers (DPR ``has_answer``; the question's answers and,
  for cross-lingual questions, the English ones), or — with
  ``--metric recall`` — when its id is one of the question's ``positive_ids``.
  Judgements are cached per (question, passage), so a grid search judges each
  passage once however many weights it tries.
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

from xqa.commands._common import CONFIG_HELP, config_path, pipeline_config
from xqa.errors import XqaError
from xqa.records import Hit, Question

METRICS = ("accuracy", "recall")


def add_source_arguments(p: argparse.ArgumentParser, passages_required: bool = False) -> None:
    g = p.add_argument_group("retrievers (a pipeline config, or folders; folders override the config)")
    g.add_argument("--config", default=None, help=CONFIG_HELP)
    g.add_argument("--bm25", "--sparse-index", dest="sparse_index", help="BM25 index folder (xqa index sparse)")
    g.add_argument("--dense", "--dense-index", dest="dense_index", help="dense index folder (xqa index dense)")
    g.add_argument("--spar", "--spar-index", dest="spar_index", help="SPAR index folder (xqa index spar)")
    g.add_argument("--roman", "--roman-index", dest="roman_index",
                   help="cross-script BM25 index folder (xqa index sparse --cross-script)")
    g.add_argument("--passages", required=passages_required,
                   help="passage file (JSONL or DPR TSV); default: the config's")


def add_question_arguments(p: argparse.ArgumentParser, flag: str = "--dev") -> None:
    p.add_argument(flag, required=True, dest="questions",
                   help="questions with answers (and positive_ids for --metric recall), any question layout")
    p.add_argument("--lang", help="language of question files that carry none")
    p.add_argument("--max-questions", type=int, default=0, help="use the first N questions only (0: all)")
    from xqa.commands._common import add_selection_arguments

    add_selection_arguments(p)
    p.add_argument("--match", choices=("dpr", "lang_aware"), default="lang_aware",
                   help="answer matching: DPR's token rule, or substring for unsegmented scripts")


def load_pipeline(args: argparse.Namespace, needed: Sequence[str]):
    """A Pipeline whose components ``needed`` (sparse / dense / spar / roman) are named; loads nothing yet."""
    from xqa.pipeline import Pipeline

    cfg = pipeline_config(args)
    names = {"sparse": cfg.retrieval.sparse_index, "dense": cfg.retrieval.dense_index,
             "spar": cfg.retrieval.spar_index, "roman": cfg.retrieval.roman_index}
    flags = {"sparse": "--bm25", "dense": "--dense", "spar": "--spar", "roman": "--roman"}
    missing = [n for n in needed if not names[n]]
    if missing:
        raise XqaError(f"no {' / '.join(missing)} index: give {' '.join(flags[n] for n in missing)} "
                       f"or a --config that names it (looked for {config_path(args) or 'none'})")
    if not cfg.passages:
        raise XqaError("no passage file: give --passages or a --config that names one")
    return Pipeline(cfg)


def read_questions(args: argparse.Namespace) -> list[Question]:
    from xqa.io import read_questions as read

    qs = read(args.questions, lang=args.lang)
    if getattr(args, "where", None) or getattr(args, "per_lang", 0):
        from xqa.commands._common import select_questions

        qs = select_questions(qs, args.where, args.per_lang)
    if args.max_questions:
        qs = qs[: args.max_questions]
    if not qs:
        raise XqaError(f"{args.questions}: no questions")
    return qs


class Judge:
    """Relevance of passages to questions, cached: answer string or gold passage id."""

    def __init__(self, questions: Sequence[Question], store, metric: str = "accuracy",
                 match: str = "lang_aware"):
        if metric not in METRICS:
            raise XqaError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        self.questions, self.store, self.metric, self.match = list(questions), store, metric, match
        self._cache: dict[tuple[int, str], bool] = {}
        if metric == "recall":
            self.gold = [set(map(str, q.meta.get("positive_ids") or ())) for q in self.questions]
            if not any(self.gold):
                raise XqaError("--metric recall needs questions with positive_ids")

    def answers(self, i: int) -> list[str]:
        q = self.questions[i]
        return list(dict.fromkeys(list(q.answers) + list(q.answers_en)))

    def relevant(self, i: int, pid: str) -> bool:
        key = (i, pid)
        hit = self._cache.get(key)
        if hit is None:
            if self.metric == "recall":
                hit = pid in self.gold[i]
            else:
                from xqa.evaluation.retrieval import has_answer

                p = self.store.get(pid)
                q = self.questions[i]
                lang = p.lang if p.lang in _unsegmented() else q.lang
                hit = has_answer(p.text, self.answers(i), lang, self.match)
            self._cache[key] = hit
        return hit

    def first_rank(self, i: int, hits: Sequence[Hit]) -> int | None:
        """1-based rank of the first relevant hit, or None."""
        for r, h in enumerate(hits, 1):
            if self.relevant(i, h.id):
                return r
        return None

    def scores(self, lists: Sequence[Sequence[Hit]], ks: Sequence[int],
               subset: Sequence[int] | None = None) -> dict[int, float]:
        """Percent per k: top-k accuracy (answer metric) or recall@k of gold ids (recall metric)."""
        idx = list(range(len(lists))) if subset is None else list(subset)
        if not idx:
            return {k: float("nan") for k in ks}
        if self.metric == "recall":
            idx = [i for i in idx if self.gold[i]]
            if not idx:
                return {k: float("nan") for k in ks}
            return {k: 100.0 * sum(len(self.gold[i] & {h.id for h in lists[i][:k]}) / len(self.gold[i])
                                   for i in idx) / len(idx) for k in ks}
        ranks = [self.first_rank(i, lists[i][: max(ks)]) for i in idx]
        return {k: 100.0 * sum(r is not None and r <= k for r in ranks) / len(idx) for k in ks}


def _unsegmented() -> frozenset[str]:
    from xqa.evaluation.languages import UNSEGMENTED_LANGUAGES

    return frozenset(UNSEGMENTED_LANGUAGES)


def write_tuned(args: argparse.Namespace, section_field: str, value: float) -> Path:
    """Set ``retrieval.<field>`` in the command's pipeline config JSON (:func:`config_path`) and
    record it under ``tuned``; returns the file written."""
    import json

    from xqa.artifacts import write_json_atomic

    path = config_path(args)
    if path is None or not path.is_file():
        raise XqaError(f"{path or 'no --config'}: no pipeline config to write the tuned value into")
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg.setdefault("retrieval", {})[section_field] = value
    cfg.setdefault("tuned", {})[section_field] = value
    write_json_atomic(path, cfg)
    return path


def batched(items: Sequence, size: int):
    for i in range(0, len(items), size):
        yield items[i: i + size]


def search_all(retriever, questions: Sequence[Question], k: int, desc: str, batch_size: int = 64,
               progress: bool = True, **kwargs) -> list[list[Hit]]:
    """``retriever.search`` over all questions in batches, with a progress bar."""
    from tqdm.auto import tqdm

    out: list[list[Hit]] = []
    with tqdm(total=len(questions), desc=desc, unit="q", disable=not progress) as bar:
        for chunk in batched(questions, batch_size):
            out.extend(retriever.search(chunk, k, **kwargs))
            bar.update(len(chunk))
    return out


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-markdown table (numbers with one decimal)."""
    def cell(x: object) -> str:
        if isinstance(x, float):
            return "–" if math.isnan(x) else f"{x:.1f}"
        return str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)
