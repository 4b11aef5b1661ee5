"""Options and helpers shared by the commands that run the pipeline."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_CONFIG = os.environ.get("XQA_CONFIG", "build/embedded/pipeline.json")


def add_pipeline_arguments(p: argparse.ArgumentParser, method_default: str | None = None) -> None:
    from xqa.config import METHODS

    g = p.add_argument_group("pipeline")
    g.add_argument("--config", default=DEFAULT_CONFIG,
                   help="pipeline config JSON (env XQA_CONFIG); 'make demo' builds the embedded one")
    g.add_argument("--method", "--retriever", dest="method", choices=METHODS, default=method_default,
                   help="retrieval method (default: the config's)")
    g.add_argument("--k", type=int, default=None, help="passages to retrieve (default: the config's)")
    g.add_argument("--sparse-index", default=None, help="override: BM25 index folder")
    g.add_argument("--dense-index", default=None, help="override: dense FAISS index folder")
    g.add_argument("--spar-index", default=None, help="override: SPAR index folder")
    g.add_argument("--roman-index", default=None,
                   help="override: cross-script BM25 index folder (xqa index sparse --cross-script)")
    g.add_argument("--passages", default=None, help="override: passages file (JSONL or DPR TSV)")
    g.add_argument("--max-frac", type=float, default=None, help="SCD: share of K open to sparse-only hits")
    g.add_argument("--alpha", type=float, default=None, help="hybrid: weight of the BM25 score")
    g.add_argument("--mu", type=float, default=None, help="SPAR: query-side weight of Λ")
    g.add_argument("--roman-weight", type=float, default=None,
                   help="sparse+roman: weight of the cross-script BM25 score")
    g.add_argument("--fallback", choices=(*METHODS, "none"), default=None,
                   help="method that searches again for a question the method finds nothing for "
                        "(default: the config's, dense when it names a dense index; 'none': never)")


def load_pipeline(args: argparse.Namespace):
    """A Pipeline from ``--config`` (if it exists) with the command-line overrides applied."""
    from xqa.config import PipelineConfig
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline

    overrides = {"sparse_index": args.sparse_index, "dense_index": args.dense_index,
                 "spar_index": args.spar_index, "roman_index": getattr(args, "roman_index", None)}
    if Path(args.config).is_file():
        cfg = PipelineConfig.load(args.config)
    elif any(overrides.values()):
        cfg = PipelineConfig(base_dir=os.getcwd())
    else:
        raise XqaError(f"{args.config}: no such pipeline config; run 'make demo' (or "
                       f"'xqa embedded build') first, or name indexes with --sparse-index/--dense-index")
    r = cfg.retrieval
    for key, val in overrides.items():
        if val:
            setattr(r, key, os.path.abspath(val))
    if args.passages:
        cfg.passages = os.path.abspath(args.passages)
    for key in ("max_frac", "alpha", "mu", "roman_weight"):
        if getattr(args, key, None) is not None:
            setattr(r, key, getattr(args, key))
    if args.method:
        r.method = args.method
    if getattr(args, "fallback", None):
        r.fallback = None if args.fallback == "none" else args.fallback
    if args.k:
        r.k = args.k
    return Pipeline(cfg)


def add_selection_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("question selection")
    g.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                   help="only questions whose record has FIELD equal to VALUE (e.g. split=test, "
                        "crosslingual=true, lang=de); repeatable")
    g.add_argument("--per-lang", type=int, default=0, metavar="N",
                   help="only the first N selected questions of each language (and of each side of "
                        "crosslingual) in file order (0: all)")


def select_questions(questions: list, where: list[str] | None = None, per_lang: int = 0) -> list:
    """``questions`` whose fields match every ``FIELD=VALUE`` of ``where``, then the first
    ``per_lang`` of each (language, cross-lingual or not) group, in their order. Deterministic,
    so ``xqa answer`` and ``xqa eval`` given the same flags take the same questions."""
    from xqa.errors import XqaError

    conds = []
    for w in where or []:
        field, sep, value = w.partition("=")
        if not sep or not field:
            raise XqaError(f"--where {w!r}: expected FIELD=VALUE")
        conds.append((field, value))

    def field_of(q, name: str) -> str:
        v = getattr(q, name, None) if name in ("id", "lang", "question") else q.meta.get(name)
        if isinstance(v, bool) or v is None:
            return str(bool(v)).lower()
        return str(v)

    out = [q for q in questions if all(field_of(q, f) == v for f, v in conds)]
    if per_lang:
        seen: dict[tuple, int] = {}
        kept = []
        for q in out:
            key = (q.lang, bool(q.meta.get("crosslingual")))
            if seen.get(key, 0) < per_lang:
                seen[key] = seen.get(key, 0) + 1
                kept.append(q)
        out = kept
    return out


def read_question_files(paths: list[str], lang: str | None = None, where: list[str] | None = None,
                        per_lang: int = 0):
    """The questions of ``paths`` (an id repeated within or across files is an error), selected
    by ``where`` and ``per_lang`` (:func:`select_questions`)."""
    from xqa.io import read_question_files as read

    out = read(paths, lang=lang)
    return select_questions(out, where, per_lang) if (where or per_lang) else out
