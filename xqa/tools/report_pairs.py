"""``xqa report pairs``: R@k of every retrieval method per (paragraph language, question
language) pair, over one pool of paragraphs in many languages.

Questions are ``xqa data corpus`` records (``questions.jsonl.gz``): a question's own paragraph
(``positive_ids``) and its parallel paragraphs in other languages (``xling``). For the pair
(C, Q) a question in Q is a hit at k when its paragraph in C is among the first k passages the
method retrieves from the whole pool — MLQA's cross-lingual setting as open retrieval. Same-
language pairs are C = Q. ``--unknown-language`` searches every question as ``und``, as one whose
language is not identified. The pool is the pipeline's passages: build one with ``xqa build``
(e.g. over ``xqa data corpus --mlqa-pool``, every MLQA dev paragraph).
"""
from __future__ import annotations

import argparse

from xqa.tools.lib.pairs import markdown, pair_recall, summarise



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="pipeline.json of a build over the pool")
    p.add_argument("--questions", required=True, help="questions with positive_ids and xling (xqa data corpus)")
    from xqa.methods import method_names

    p.add_argument("--methods", nargs="+", default=list(method_names()),
                   help="retrieval methods to compare (default: every method of xqa.methods, those whose "
                        "indexes the build lacks skipped)")
    p.add_argument("--ks", nargs="+", type=int, default=[1, 5, 20],
                   help="cut-offs; each method retrieves the largest, as the pipeline asked for that many "
                        "passages does (a fusion's R@1 and R@5 depend on it: it fuses each side's top that many)")
    p.add_argument("--split", default=None, help="only questions of this split (tune, test)")
    p.add_argument("--dense-index", default=None, help="another dense index for the dense methods (e.g. a "
                                                         "fine-tuned encoder's), labelled --label")
    p.add_argument("--label", default=None, help="suffix of the method names in the table (with --dense-index)")
    p.add_argument("--unknown-language", action="store_true",
                   help="search every question as 'und' (a language not identified, or one without a BM25 "
                        "index: the BM25 indexes of its script searched); the tables still group questions "
                        "by their real language")
    p.add_argument("--out", help="write the table (JSON) here")
    p.add_argument("--markdown", help="write the tables (markdown) here")


def run(args: argparse.Namespace) -> int:
    import time

    from xqa.config import PipelineConfig
    from xqa.errors import InputError, XqaError
    from xqa.io import jsonl_objects
    from xqa.pipeline import Pipeline
    from xqa.records import UNKNOWN_LANG, Question

    questions = []
    for line, q in jsonl_objects(args.questions):
        lacking = [key for key in ("id", "question", "lang") if not isinstance(q.get(key), str)]
        if lacking:   # the shipped corpus's layout (xqa data corpus): each names its paragraphs too
            raise InputError(args.questions, line, f"question record without {', '.join(map(repr, lacking))} "
                                                   "(xqa report pairs reads xqa data corpus's questions.jsonl)")
        if args.split is None or q.get("split") == args.split:
            questions.append(q)
    if not questions:
        raise XqaError(f"{args.questions}: no questions" + (f" of split {args.split}" if args.split else ""))
    cfg = PipelineConfig.load(args.config)
    if args.dense_index:
        import os

        cfg.retrieval.dense_index = os.path.abspath(args.dense_index)
    pipe = Pipeline(cfg)
    qs = [Question(id=q["id"], question=q["question"], lang=UNKNOWN_LANG if args.unknown_language else q["lang"])
          for q in questions]
    kmax = max(args.ks)
    results, summary = {}, {}
    for method in args.methods:
        if method not in pipe.methods:
            print(f"{method}: the config names no index for it; skipped")
            continue
        t0 = time.perf_counter()
        ranked = []
        for i in range(0, len(qs), 256):
            hits = pipe.retriever(method).search(qs[i: i + 256], kmax)
            ranked += [[h.id for h in hs] for hs in hits]
        name = f"{method}{'-' + args.label if args.label else ''}"
        table = pair_recall(ranked, questions, args.ks)
        results[name] = table
        summary[name] = {**summarise(table, args.ks), "seconds": round(time.perf_counter() - t0, 1)}
        print(f"{name:<16} " + "  ".join(f"{k} {v:.3f}" for k, v in summary[name].items() if k != "seconds")
              + f"  ({summary[name]['seconds']} s)", flush=True)
    if args.out:
        from xqa.artifacts import write_json_atomic

        write_json_atomic(args.out, {"config": args.config, "questions": args.questions, "split": args.split,
                                     "unknown_language": args.unknown_language, "ks": args.ks, "summary": summary,
                                     "pairs": {m: {f"{c}-{q}": v for (c, q), v in t.items()}
                                               for m, t in results.items()}})
    if args.markdown:
        from xqa.artifacts import write_text_atomic

        write_text_atomic(args.markdown, markdown(results, summary, args.ks))
    return 0
