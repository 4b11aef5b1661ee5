"""``xqa tune alpha``: grid-search the score-hybrid weight α on a dev set (paper 001 §2.1, §3).

Dense and BM25 are each searched once to depth k'; for every α in [0, 2]
step 0.05 the hybrid ``dense + α·BM25`` over the union is re-ranked and scored
(top-k answer accuracy, or recall@k of ``positive_ids``). Ties go to the
smaller α. ``--write-config`` stores the best α in the pipeline config.

``--pair sparse+roman`` tunes the other score hybrid the same way: BM25 in the
question's language plus w × cross-script BM25 (``retrieval.roman_weight``).
"""
from __future__ import annotations

import argparse

from xqa.commands._fusion_common import (
    METRICS,
    add_question_arguments,
    add_source_arguments,
)


def alpha_grid(lo: float = 0.0, hi: float = 2.0, step: float = 0.05) -> list[float]:
    """``lo, lo+step, ..., hi`` without float drift (41 values by default)."""
    n = round((hi - lo) / step)
    return [round(lo + i * step, 10) for i in range(n + 1)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="top-k answer accuracy, or recall@k of the questions' positive_ids")
    p.add_argument("--at", type=int, default=20, help="the k of the metric (Ma et al. tune top-20)")
    p.add_argument("--depth", type=int, default=100, help="k': each side's depth; the union is re-ranked")
    p.add_argument("--normalize", action="store_true", help="min-max normalise each list first (Hybrid_norm)")
    p.add_argument("--step", type=float, default=0.05, help="grid step over [0, 2]")
    p.add_argument("--max-alpha", type=float, default=2.0, help="grid upper end")
    p.add_argument("--out", help="write the grid (α → score) and the best α to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best α in --config (retrieval.alpha)")
    p.add_argument("--batch-size", type=int, default=64, help="questions per search call")
    p.add_argument("--pair", choices=("dense+bm25", "sparse+roman"), default="dense+bm25",
                   help="which hybrid: dense + α·BM25 (retrieval.alpha), or BM25 + w·cross-script BM25 "
                        "(retrieval.roman_weight, method sparse+roman)")


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from retriever.fused import sparse_search
    from retriever.fusion import hybrid
    from xqa.artifacts import write_json_atomic
    from xqa.commands._fusion_common import (
        Judge,
        batched,
        format_table,
        load_pipeline,
        read_questions,
        search_all,
        write_tuned,
    )
    from xqa.errors import XqaError

    if args.at < 1 or args.depth < args.at:
        raise XqaError(f"need 1 <= --at <= --depth (got {args.at}, {args.depth})")
    questions = read_questions(args)
    roman = args.pair == "sparse+roman"
    pipe = load_pipeline(args, ("sparse", "roman") if roman else ("dense", "sparse"))
    sparse = pipe.component("sparse")
    s_lists: list = []
    for chunk in tqdm(list(batched(questions, args.batch_size)), desc="BM25", unit="batch"):
        s_lists.extend(sparse_search(sparse, chunk, args.depth))
    if roman:  # the first list is BM25, the weighted one the cross-script index
        d_lists, s_lists = s_lists, search_all(pipe.component("roman"), questions, args.depth,
                                               "cross-script BM25", args.batch_size)
    else:
        d_lists = search_all(pipe.component("dense"), questions, args.depth, "dense", args.batch_size)
    judge = Judge(questions, pipe.store, args.metric, args.match)
    ks = sorted({1, 5, args.at})
    grid = alpha_grid(0.0, args.max_alpha, args.step)
    rows, table = [], {}
    for alpha in tqdm(grid, desc="α grid", unit="α"):
        fused = [hybrid(d, s, args.at, alpha, args.normalize) for d, s in zip(d_lists, s_lists)]
        sc = judge.scores(fused, ks)
        table[alpha] = sc[args.at]
        rows.append([f"{alpha:.2f}"] + [sc[k] for k in ks])
    best = max(grid, key=lambda a: (table[a], -a))
    names = ("bm25", "roman") if roman else ("dense", "bm25")
    base = {names[0]: judge.scores(d_lists, [args.at])[args.at], names[1]: judge.scores(s_lists, [args.at])[args.at]}
    name = "accuracy" if args.metric == "accuracy" else "recall"
    weight = "w" if roman else "α"
    print(format_table([weight] + [f"{name}@{k}" for k in ks], rows))
    alone = (f"BM25 alone {base['bm25']:.1f}, cross-script BM25 alone {base['roman']:.1f}" if roman
             else f"dense alone {base['dense']:.1f}, BM25 alone {base['bm25']:.1f}")
    print(f"\n{alone}; best {weight} = {best:.2f} "
          f"({name}@{args.at} = {table[best]:.1f}, {len(questions)} questions, "
          f"{'normalised' if args.normalize else 'raw'} scores, k' = {args.depth})")
    if args.out:
        write_json_atomic(args.out, {"pair": args.pair, "best_alpha": best, "metric": f"{name}@{args.at}", "normalize": args.normalize,
                                     "depth": args.depth, "questions": len(questions), "baselines": base,
                                     "grid": {f"{a:.2f}": v for a, v in table.items()}})
    if args.write_config and roman:
        path = write_tuned(args, "roman_weight", best)
        print(f"retrieval.roman_weight = {best:.2f} written to {path}")
    elif args.write_config:
        write_tuned(args, "alpha", best)
        path = write_tuned(args, "normalize", args.normalize)
        print(f"retrieval.alpha = {best:.2f} written to {path}")
    return 0
