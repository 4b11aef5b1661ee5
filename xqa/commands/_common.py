"""Options and helpers shared by the commands that run the pipeline."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

# The pipeline config used when the command line names none: $XQA_CONFIG, else the embedded build's.
DEFAULT_CONFIG = "build/embedded/pipeline.json"
CONFIG_ENV = "XQA_CONFIG"
# Command-line options (argparse dests, equal to the config's field names) that name a corpus.
INDEXES = ("sparse_index", "dense_index", "spar_index", "roman_index", "dhr_index", "pieces_index",
           "bm25_aug_model")
CORPUS = (*INDEXES, "passages")

CONFIG_HELP = (f"pipeline config JSON (default: ${CONFIG_ENV}, else {DEFAULT_CONFIG}, which 'make demo' "
               "builds; indexes or passages named on the command line without --config are the whole "
               "corpus: no default config is read)")


def add_pipeline_arguments(p: argparse.ArgumentParser, method_default: str | None = None) -> None:
    from xqa.config import METHODS, NO_FALLBACK

    g = p.add_argument_group("pipeline")
    g.add_argument("--config", default=None, help=CONFIG_HELP)
    g.add_argument("--method", "--retriever", dest="method", choices=METHODS, default=method_default,
                   help="retrieval method (default: the config's; for indexes named on the command line "
                        "without --config, the first method that uses the most of them)")
    g.add_argument("--k", type=int, default=None, help="passages to retrieve (default: the config's)")
    g.add_argument("--sparse-index", default=None, help="BM25 index folder")
    g.add_argument("--dense-index", default=None, help="dense FAISS index folder")
    g.add_argument("--spar-index", default=None, help="SPAR index folder")
    g.add_argument("--roman-index", default=None,
                   help="cross-script BM25 index folder (xqa index sparse --cross-script)")
    g.add_argument("--dhr-index", default=None,
                   help="densified lexical + dense index folder (xqa index dhr): methods dlr, dhr")
    g.add_argument("--pieces-index", default=None,
                   help="BM25 index over e5 pieces (xqa index pieces): methods pieces, bm25-aug")
    g.add_argument("--bm25-aug-model", default=None,
                   help="learned BM25 query augmentation (xqa train bm25-aug): method bm25-aug")
    g.add_argument("--passages", default=None, help="passages file of those indexes (JSONL or DPR TSV)")
    g.add_argument("--max-frac", type=float, default=None, help="SCD: share of K open to sparse-only hits")
    g.add_argument("--alpha", type=float, default=None, help="hybrid: weight of the BM25 score")
    g.add_argument("--mu", type=float, default=None, help="SPAR: query-side weight of Λ")
    g.add_argument("--roman-weight", type=float, default=None,
                   help="sparse+roman: weight of the cross-script BM25 score")
    g.add_argument("--lam", type=float, default=None, help="dhr: weight of the dense score next to GIP")
    g.add_argument("--fallback", choices=(*METHODS, NO_FALLBACK), default=None,
                   help="method that searches again for a question the method finds nothing for "
                        f"(default: the config's, dense when it names a dense index; '{NO_FALLBACK}': never)")


def config_path(args: argparse.Namespace) -> Path | None:
    """The pipeline config a command starts from: ``--config``; else, unless the command line
    names a corpus (indexes or passages), ``$XQA_CONFIG`` or the embedded build's. An explicit
    corpus never mixes with the default config's indexes, passages or fallback."""
    if getattr(args, "config", None):
        return Path(args.config)
    if any(getattr(args, name, None) for name in CORPUS):
        return None
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def pipeline_config(args: argparse.Namespace):
    """The :class:`~xqa.config.PipelineConfig` of :func:`config_path` (an empty one for a corpus
    named on the command line), with the command line's corpus and settings applied."""
    from xqa.config import PipelineConfig
    from xqa.errors import XqaError

    path = config_path(args)
    if path is None:
        cfg = PipelineConfig(base_dir=os.getcwd())
    elif path.is_file() or getattr(args, "config", None):
        cfg = PipelineConfig.load(path)
    else:
        raise XqaError(f"{path}: no such pipeline config; run 'make demo' (or 'xqa embedded build') first, "
                       f"or name a config with --config, or indexes with --sparse-index/--dense-index "
                       f"and their --passages")
    r = cfg.retrieval
    for name in INDEXES:
        if getattr(args, name, None):
            setattr(r, name, os.path.abspath(getattr(args, name)))
    if getattr(args, "passages", None):
        cfg.passages = os.path.abspath(args.passages)
    if path is None:
        if not cfg.passages:
            raise XqaError("indexes named on the command line need their passages: add --passages FILE "
                           "(or name a pipeline config with --config)")
        if not getattr(args, "method", None):
            r.method = method_for(cfg)
    return cfg


def method_for(cfg) -> str:
    """The first retrieval method (in ``METHODS`` order) that uses the most of the config's indexes."""
    from retriever.fused import NEEDS
    from xqa.config import METHODS
    from xqa.errors import XqaError

    r = cfg.retrieval
    have = {"sparse": r.sparse_index, "dense": r.dense_index, "spar": r.spar_index, "roman": r.roman_index,
            "dhr": r.dhr_index, "pieces": r.pieces_index, "bm25aug": r.bm25_aug_model}
    usable = [m for m in METHODS if all(have[n] for n in NEEDS[m])]
    if not usable:
        raise XqaError("no index to search: name one with --sparse-index, --dense-index, --spar-index, "
                       "--roman-index, --dhr-index or --pieces-index")
    return max(usable, key=lambda m: len(NEEDS[m]))


def load_pipeline(args: argparse.Namespace):
    """A Pipeline from :func:`pipeline_config` with the settings of :func:`add_pipeline_arguments`
    applied (loads nothing yet)."""
    from xqa.pipeline import Pipeline

    cfg = pipeline_config(args)
    for key in ("method", "k", "max_frac", "alpha", "mu", "roman_weight", "lam", "fallback"):
        if getattr(args, key, None) is not None:
            setattr(cfg.retrieval, key, getattr(args, key))
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
