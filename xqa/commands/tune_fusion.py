"""``xqa tune fusion``: grid-search the evidence-fusion weights β, γ (and ε) on dev.

Runs the reader (beam search, n-best) over the dev retrieval results, then
searches coarse to fine (``reader.tuning``) for the weights that maximise mean
F1 of the fused answer, and writes them to a JSON file together with the dev
scores of fusion and of the reader alone. ``--cache`` keeps the reader outputs
(JSONL) so a rerun only redoes the search.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="reader artifact (or training run folder)")
    p.add_argument("--dev", required=True, help="dev retrieval results (JSON list or JSONL) with answers")
    p.add_argument("--out", required=True, help="JSON file for the tuned beta, gamma, miss")
    add_reading_arguments(p)
    p.add_argument("--passes", type=int, default=3, help="grid passes (1 coarse + finer ones)")


def add_reading_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared with ``xqa report reader``."""
    p.add_argument("--n-context", type=int, default=0, help="passages per question (0: the model's setting)")
    p.add_argument("--beams", type=int, default=4, help="beam size")
    p.add_argument("--n-best", type=int, default=4, help="candidates kept per question")
    p.add_argument("--span-beams", type=int, default=0,
                   help="add this many candidates from a beam search restricted to spans of the passages read "
                        "(0: free beam search only)")
    p.add_argument("--batch-size", type=int, default=8, help="questions per reader batch")
    p.add_argument("--limit", type=int, default=0, help="use only the first N questions of each file (0: all)")
    p.add_argument("--eval-mode", choices=["official", "lang_aware", "simple"], default="official",
                   help="EM/F1: MIA official, its language-aware variant, or simple normalized")
    p.add_argument("--labels", help="answer label table (JSONL, xqa.world.labels): a span copied from a passage in "
                        "another language answers in the question's language (the embedded world's: "
                        "world/labels.jsonl)")
    p.add_argument("--cache", help="folder for reader outputs (JSONL), reused when present")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")


def load_results(path: str, limit: int = 0):
    from xqa.errors import XqaError
    from xqa.io import read_results

    results = read_results(path)
    results = results[:limit] if limit else results
    if not results:
        raise XqaError(f"{path}: no questions")
    return results


def reader_outputs(reader, results, n_context: int, beams: int, n_best: int, batch_size: int,
                   cache: Path | None = None, span_beams: int = 0) -> list | None:
    """``ReaderOutput`` per result, read from ``cache`` when it holds exactly these questions.

    Under torchrun the processes share the reading and only rank 0 gets the outputs (the
    others get None and should stop there).
    """
    from reader.fid.data import example_from_records
    from reader.base import ReaderOutput
    from xqa.artifacts import write_text_atomic
    from xqa.training import main_process, map_sharded

    ids = [r.question.id for r in results]
    if cache is not None and cache.is_file():
        rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
        if [r["id"] for r in rows] == ids:
            print(f"reader outputs from {cache}")
            return [ReaderOutput.from_dict(r) for r in rows]
    examples = [example_from_records(r.question, r.ctxs[:n_context]) for r in results]
    outputs = map_sharded(lambda part: reader.read_examples(part, n_context=n_context, beams=beams, n_best=n_best,
                                                            batch_size=batch_size, progress=main_process(),
                                                            span_beams=span_beams), examples)
    if outputs is None:
        return None
    if cache is not None:
        write_text_atomic(cache, "".join(json.dumps({"id": i, **o.to_dict()}, ensure_ascii=False) + "\n"
                                         for i, o in zip(ids, outputs)))
    return outputs


def beam_key(args: argparse.Namespace) -> str:
    """Cache-file stem of a beam-search setting (the n-best differs with span candidates)."""
    return f"beam{args.beams}" + (f".span{args.span_beams}" if args.span_beams else "")


def load_labels(path: str | None):
    from xqa.world.labels import AnswerLabels

    return AnswerLabels.load(path) if path else None


def fusion_set(outputs, results, n_context: int, scorer, labels=None):
    from reader.tuning import prepare

    return prepare(outputs, [r.ctxs[:n_context] for r in results],
                   [r.question.answers for r in results], [r.question.lang for r in results], scorer, labels)


def run(args: argparse.Namespace) -> int:
    import torch

    from reader.tuning import tune_fusion
    from xqa.artifacts import write_json_atomic
    from xqa.commands.train_reader import make_scorer
    from xqa.training import init_distributed, main_process

    if args.threads:
        torch.set_num_threads(args.threads)
    init_distributed()  # under torchrun: join the job (and on GPUs take this process's own) before loading
    labels = load_labels(args.labels)  # before the reading: a bad table fails fast
    from xqa.pipeline import load_reader

    reader = load_reader(args.model)
    if getattr(reader, "family", "fid") == "span":
        return _tune_span(args, reader)
    n_context = args.n_context or reader.n_context
    results = [r for r in load_results(args.dev, args.limit) if r.question.answers]
    cache = Path(args.cache) / f"dev.{beam_key(args)}.jsonl" if args.cache else None
    outputs = reader_outputs(reader, results, n_context, args.beams, args.n_best, args.batch_size, cache,
                             args.span_beams)
    if not main_process():  # another process of a torchrun job: it shared the reading, rank 0 tunes
        return 0
    best = tune_fusion(fusion_set(outputs, results, n_context, make_scorer(args.eval_mode), labels),
                       passes=args.passes, progress=True)
    best.update({"model": str(args.model), "dev": str(args.dev), "n_context": n_context,
                 "beams": args.beams, "n_best": args.n_best, "span_beams": args.span_beams,
                 "eval_mode": args.eval_mode, "labels": args.labels})
    write_json_atomic(args.out, best)
    print(f"beta={best['beta']:.4g} gamma={best['gamma']:.4g} miss={best['miss']:.3g}: "
          f"dev F1 {best['dev_f1']:.4f} (reader alone {best['reader_only_f1']:.4f}) -> {args.out}")
    return 0


def _tune_span(args: argparse.Namespace, reader) -> int:
    """β, γ for a span reader: read the dev passages once, then the grid (reader.tuning)."""
    from reader.span.inference import SpanOutput
    from reader.tuning import prepare_spans, tune_span_fusion
    from xqa.artifacts import write_json_atomic, write_text_atomic
    from xqa.commands.train_reader import make_scorer
    from xqa.training import main_process, map_sharded

    n_context = args.n_context or 10
    results = [r for r in load_results(args.dev, args.limit) if r.question.answers]
    cache = Path(args.cache) / f"dev.span{n_context}.jsonl" if args.cache else None
    ids = [r.question.id for r in results]
    outputs = None
    if cache is not None and cache.is_file():
        rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
        if [r["id"] for r in rows] == ids:
            outputs = [SpanOutput.from_dict(r) for r in rows]
    if outputs is None:
        outputs = map_sharded(lambda part: reader.read([r.question for r in part],
                                                       [list(r.ctxs[:n_context]) for r in part],
                                                       n_best=args.n_best), results)
        if outputs is None:   # another process of a torchrun job
            return 0
        if cache is not None:
            write_text_atomic(cache, "".join(json.dumps({"id": i, **o.to_dict()}, ensure_ascii=False) + "\n"
                                             for i, o in zip(ids, outputs)))
    if not main_process():
        return 0
    s = prepare_spans(outputs, [r.ctxs[:n_context] for r in results], [r.question.answers for r in results],
                      [r.question.lang for r in results], make_scorer(args.eval_mode))
    best = tune_span_fusion(s, passes=args.passes, progress=True)
    best.update({"model": str(args.model), "dev": str(args.dev), "n_context": n_context,
                 "n_best": args.n_best, "eval_mode": args.eval_mode, "reader": "span"})
    write_json_atomic(args.out, best)
    print(f"beta={best['beta']:.4g} gamma={best['gamma']:.4g} same_language={best['same_language']:g}: "
          f"dev F1 {best['dev_f1']:.4f} "
          f"(reader alone {best['reader_only_f1']:.4f}) -> {args.out}")
    return 0
