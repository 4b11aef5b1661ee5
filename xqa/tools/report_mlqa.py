"""``xqa report mlqa``: retrieval accuracy per language on MLQA dev, same-language pairs
(or, with ``--cross-lingual``, questions in each language over the English contexts).

Top-k answer accuracy and recall@k of the gold context, per language and
retriever (:mod:`xqa.tools.lib.mlqa` has the tasks and the table). BM25 and the
cross-script index are built here from the corpus; Λ is trained on it
(:mod:`xqa.tools.lib.mlqa_lexical`).
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from xqa.tools.lib.mlqa import (
    DEFAULT_KS,
    MLQA_LANGS,
    MlqaLanguage,
    SearchAs,
    bm25_retriever,
    load_mlqa,
    load_mlqa_cross,
    markdown_table,
    retrieval_table,
    roman_retriever,
)



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
    """SPAR's Λ trained on the MLQA contexts' sentences, BM25 as teacher (:mod:`xqa.tools.lib.mlqa_lexical`)."""
    from xqa.tools.lib.mlqa_lexical import lexical_retriever

    teacher = bm25_retriever(data, work / "bm25", False, args.threads)
    try:
        return lexical_retriever(data, work, teacher)
    finally:
        teacher.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="MLQA v1 dev folder (default: $XQA_DATA/mlqa/dev, else shared/data/mlqa/dev "
                             "beside the repository; skipped when absent)")
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

    from xqa.data.sets import shared_data

    data_dir = Path(args.data) if args.data else shared_data() / "mlqa" / "dev"
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
