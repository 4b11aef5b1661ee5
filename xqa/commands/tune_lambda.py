"""``xqa tune lambda``: pick DHR's dense weight λ on a dev set (score = GIP + λ·dense).

DHR (Lin & Lin, "A Dense Representation Framework for Lexical and Semantic
Matching", TOIS 2023) adds the densified-BM25 score GIP and λ times the dense
inner product. The scores are used raw, not normalised: GIP is on the BM25
scale (about 10-40 for a matching passage) while e5 cosines sit near 0.8 and
differ between passages by a few hundredths, so the useful λ is large; the
default grid runs from 0 (GIP alone) through 0.05 … 2 up to 5000, where the
dense part decides the ranking. Questions are tokenized and encoded once;
each λ is one exact pass over the unchanged index, scored by R@k (top-k
answer accuracy, or recall of ``positive_ids``). Ties go to the smaller λ.
``--write-config`` stores λ in the pipeline config (``retrieval.lam``).
"""
from __future__ import annotations

import argparse
import math

from xqa.commands._fusion_common import (
    METRICS,
    add_question_arguments,
    add_source_arguments,
)

LAMBDA_GRID: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0,
                                  20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0, 2000.0, 5000.0)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p)
    add_source_arguments(p)
    p.add_argument("--dhr", "--dhr-index", dest="dhr_index", help="DHR index folder (xqa index dhr)")
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="top-k answer accuracy (R@k in the ODQA sense), or recall@k of positive_ids")
    p.add_argument("--at", type=int, default=20, help="the k of the metric")
    p.add_argument("--grid", type=float, nargs="+",
                   help="λ values to try (default: 0, 0.05 … 2, then up to 5000; raw scores)")
    p.add_argument("--out", help="write the grid (λ → score) and the best λ to this JSON file")
    p.add_argument("--write-config", action="store_true", help="store the best λ in --config (retrieval.lam)")
    p.add_argument("--batch-size", type=int, default=64, help="questions per encoding and search batch")


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from retriever.dlr import DhrRetriever
    from xqa.artifacts import write_json_atomic
    from xqa.commands._common import config_path, pipeline_config
    from xqa.commands._fusion_common import Judge, format_table, read_questions
    from xqa.config import PipelineConfig
    from xqa.errors import XqaError
    from xqa.pipeline import Pipeline

    if args.at < 1:
        raise XqaError(f"--at must be >= 1 (got {args.at})")
    grid = sorted(set(args.grid or LAMBDA_GRID))
    if any(not (x >= 0 and math.isfinite(x)) for x in grid):
        raise XqaError("λ values must be finite and >= 0")
    questions = read_questions(args)
    cfg = pipeline_config(args)
    if not cfg.retrieval.dhr_index:
        raise XqaError(f"no DHR index: give --dhr or a --config that names one (retrieval.dhr_index; "
                       f"looked for {config_path(args) or 'none'})")
    if not cfg.passages:
        raise XqaError("no passage file: give --passages or a --config that names one")
    dhr = DhrRetriever.load(cfg.path(cfg.retrieval.dhr_index), batch_size=args.batch_size).with_lambda(1.0)
    batches = []
    for i in tqdm(range(0, len(questions), args.batch_size), desc="encoding questions", unit="batch"):
        batches.append(dhr.encode([q.question for q in questions[i: i + args.batch_size]], dense=True))
    judge = Judge(questions, Pipeline(cfg).store, args.metric, args.match)
    ks = sorted({5, 20, args.at})

    def lists(view, lam=None):
        return [h for b in batches for h in view.search_encoded(b, max(ks), lam=lam)]

    table, rows = {}, []
    for lam in tqdm(grid, desc="λ grid", unit="λ"):
        sc = judge.scores(lists(dhr, lam), ks)
        table[lam] = sc[args.at]
        rows.append([f"{lam:g}"] + [sc[k] for k in ks])
    dense_alone = judge.scores(lists(dhr.dense_part()), [args.at])[args.at]
    best = max(grid, key=lambda x: (table[x], -x))
    name = "accuracy" if args.metric == "accuracy" else "recall"
    print(format_table(["λ"] + [f"{name}@{k}" for k in ks], rows))
    lex = f"GIP alone {table[0.0]:.1f}, " if 0.0 in table else ""
    print(f"\n{lex}dense alone {dense_alone:.1f}; best λ = {best:g} ({name}@{args.at} = {table[best]:.1f}, "
          f"{len(questions)} questions)")
    if args.out:
        write_json_atomic(args.out, {"best_lam": best, "metric": f"{name}@{args.at}", "questions": len(questions),
                                     "dense_alone": dense_alone, "grid": {f"{x:g}": v for x, v in table.items()}})
    if args.write_config:
        path = config_path(args)
        if path is None or not path.is_file():
            raise XqaError(f"{path or 'no --config'}: no pipeline config to write the tuned λ into")
        pc = PipelineConfig.load(path)
        pc.retrieval.lam = best
        pc.tuned["lam"] = best
        pc.save(path)
        print(f"retrieval.lam = {best:g} written to {path}")
    return 0
