"""``xqa diagnose lexical``: does Λ behave like BM25? (SPAR, Chen et al. 2022, Tables 6 and 7).

1. Rank-biased overlap (p = 0.9) with BM25's ranking, for Λ, the dense
   retriever and SPAR (paper: Λ ~0.5-0.6, DPR ~0.1 with BM25). BM25 searches
   the question's language only, so by default the other rankings are cut to
   that language too (``--all-languages`` keeps them global).
2. Token-shuffled questions: top-k answer accuracy on the original and on
   word-shuffled questions; a bag-of-words model (BM25, and Λ if it learned
   to be one) should not care, an order-aware dense encoder does.

Λ and the dense retriever are the two halves of the SPAR index (exact; see
``retriever.spar.index``), so one ``--spar`` folder is enough.
"""
from __future__ import annotations

import argparse

from xqa.cli_options import add_question_arguments, add_source_arguments
from xqa.evaluation.judge import METRICS


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_question_arguments(p, flag="--questions")
    add_source_arguments(p)
    p.add_argument("--depth", type=int, default=100, help="ranking depth compared by RBO")
    p.add_argument("--p", type=float, default=0.9, help="RBO persistence (the paper's 0.9)")
    p.add_argument("--all-languages", action="store_true",
                   help="compare Λ / dense rankings over all languages with BM25's (default: question language)")
    p.add_argument("--ks", type=int, nargs="+", default=[20, 100], help="top-k accuracies of the shuffle test")
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="answer-string accuracy, or recall of positive_ids, for the shuffle test")
    p.add_argument("--seed", type=int, default=0, help="seed of the token shuffling")
    p.add_argument("--out", help="also write the numbers to this JSON file")
    p.add_argument("--batch-size", type=int, default=64, help="questions per search call")


def _same_language(lists, questions, depth):
    return [[h for h in hits if h.lang == q.lang][:depth] for hits, q in zip(lists, questions)]


def run(args: argparse.Namespace) -> int:
    import random

    from retriever.combined import sparse_search
    from retriever.spar.diagnostics import mean_rbo, shuffle_tokens
    from xqa.artifacts import write_json_atomic
    from xqa.cli_options import load_pipeline, read_questions
    from xqa.evaluation.judge import Judge, batched, format_table, search_all
    from xqa.records import Question

    questions = read_questions(args)
    pipe = load_pipeline(args, ("sparse", "spar"))
    sparse, spar = pipe.component("sparse"), pipe.component("spar")
    systems = {"BM25": None, "Λ": spar.part("lexical"), "dense": spar.part("dense"),
               f"SPAR (μ={spar.mu:g})": spar}
    if pipe.config.retrieval.dense_index and args.dense_index:
        systems["dense"] = pipe.component("dense")
    deep = max(max(args.ks), args.depth if args.all_languages else 4 * args.depth)

    def run_all(qs, desc):
        out = {}
        bm25: list = []
        for chunk in batched(qs, args.batch_size):
            bm25.extend(sparse_search(sparse, chunk, max(max(args.ks), args.depth)))
        out["BM25"] = bm25
        for name, r in systems.items():
            if r is not None:
                out[name] = search_all(r, qs, deep, f"{name} {desc}", args.batch_size)
        return out

    original = run_all(questions, "")
    rng = random.Random(args.seed)
    shuffled_q = [Question(q.id, shuffle_tokens(q.question, rng), q.lang, q.answers, q.answers_en, q.meta)
                  for q in questions]
    shuffled = run_all(shuffled_q, "(shuffled)")

    have_bm25 = [i for i, h in enumerate(original["BM25"]) if h]
    rbo_rows, rbo = [], {}
    for name in systems:
        if name == "BM25":
            continue
        lists = original[name]
        if not args.all_languages:
            lists = _same_language(lists, questions, args.depth)
        a = [[h.id for h in lists[i][: args.depth]] for i in have_bm25]
        b = [[h.id for h in original["BM25"][i][: args.depth]] for i in have_bm25]
        rbo[name] = mean_rbo(a, b, p=args.p)
        rbo_rows.append([name, rbo[name]])
    judge = Judge(questions, pipe.store, args.metric, args.match)
    acc_rows, acc = [], {}
    for name in systems:
        o = judge.scores(original[name], args.ks)
        s = judge.scores(shuffled[name], args.ks)  # same questions, same answers: the judge's cache holds
        acc[name] = {"original": o, "shuffled": s}
        acc_rows.append([name] + [o[k] for k in args.ks] + [s[k] for k in args.ks]
                        + [s[k] - o[k] for k in args.ks])
    scope = "all languages" if args.all_languages else "question language"
    print(f"Rank-biased overlap with BM25 (p={args.p}, depth {args.depth}, {scope}, "
          f"{len(have_bm25)} questions with BM25 hits)\n")
    print(format_table(["retriever", "RBO w/ BM25"], [[n, v * 100] for n, v in rbo_rows]).replace(
        "RBO w/ BM25 |", "RBO w/ BM25 (×100) |"))
    name = "accuracy" if args.metric == "accuracy" else "recall"
    print(f"\nToken-shuffled questions ({len(questions)} questions, {name})\n")
    print(format_table(["retriever"] + [f"@{k}" for k in args.ks] + [f"shuffled @{k}" for k in args.ks]
                       + [f"Δ@{k}" for k in args.ks], acc_rows))
    if args.out:
        write_json_atomic(args.out, {"rbo": rbo, "rbo_p": args.p, "depth": args.depth, "scope": scope,
                                     "questions": len(questions), "rbo_questions": len(have_bm25),
                                     "shuffle": {n: {k: {str(kk): v for kk, v in d.items()} for k, d in x.items()}
                                                 for n, x in acc.items()}, "metric": name})
    return 0
