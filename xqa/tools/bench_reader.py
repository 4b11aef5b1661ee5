"""``xqa bench reader``: FiD CPU latency vs number of passages, and training tokens/s.

Examples::

    xqa bench reader                               # tiny and small, 1/5/20/60 passages
    xqa bench reader --sizes tiny --passages 1,5,20 --json build/bench/reader.json
    xqa bench reader --span build/embedded/reader  # a reader folder (span or FiD) on real questions and paragraphs
    # mt5-base's shape training 100 passages x 250 tokens a question on a GPU:
    xqa bench reader --sizes base --train-only --train-passages 100 --length 250 --train-batch 1 \
        --device cuda --bf16 --gradient-checkpointing
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", default="tiny,small",
                   help="comma-separated configs: tiny, small (mt5-small's shape), base (mt5-base's shape)")
    p.add_argument("--passages", default="1,5,20,60", help="comma-separated passage counts timed")
    p.add_argument("--length", type=int, default=128, help="tokens per passage")
    p.add_argument("--answer-len", type=int, default=8, help="tokens decoded per question")
    p.add_argument("--beams", type=int, default=4, help="beam size of the beam-search column")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions (median) after one warm-up")
    p.add_argument("--budget", type=float, default=5.0,
                   help="seconds: a measurement slower than this is run once, not repeated")
    p.add_argument("--prompt-tokens", type=int, default=0, metavar="N",
                   help="time reading after a decoder prompt of N tokens, as a reader trained with "
                        "--decoder-prompt reads its question (0: none; the embedded world's are about 30)")
    p.add_argument("--train-passages", type=int, default=5, help="passages per question in the training step")
    p.add_argument("--train-batch", type=int, default=8, help="questions per training step")
    p.add_argument("--train-steps", type=int, default=3, help="timed training steps (median)")
    p.add_argument("--train-only", action="store_true", help="time training only (no latency table)")
    p.add_argument("--device", default="cpu", help="where training is timed: cpu or cuda (peak memory is reported there)")
    p.add_argument("--bf16", action="store_true", help="training under bf16 autocast")
    p.add_argument("--gradient-checkpointing", action="store_true", help="training with gradient checkpointing")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.add_argument("--span", "--reader", dest="span", metavar="DIR",
                   help="a reader folder (span or FiD; a packed reader or a kit run with --base): time reading "
                        "real shipped paragraphs per question (--passages counts, --questions of them) instead "
                        "of random-weight FiD configs")
    from xqa.reader_artifacts import add_base_argument

    add_base_argument(p, "--reader")
    p.add_argument("--questions", type=int, default=20, help="--span: questions timed per passage count")
    p.add_argument("--precisions", default="fp32,int8",
                   help="--span: CPU precisions timed in turn (fp32, bf16, int8: a span reader's int8 runtime "
                        "where it has one, a FiD's quantised linear layers)")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import torch

    from xqa.artifacts import write_json_atomic
    from xqa.tools.lib.reader import VOCAB, format_tables, latency, training
    from xqa.errors import XqaError

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.span:
        return _bench_span(args)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if not sizes or any(s not in VOCAB for s in sizes):
        raise XqaError(f"--sizes: choose among {', '.join(VOCAB)}")
    try:
        passages = [int(x) for x in args.passages.split(",") if x.strip()]
    except ValueError:
        raise XqaError(f"--passages: expected comma-separated integers, got {args.passages!r}") from None
    if not passages or min(passages) < 1 or args.length < 2 or args.answer_len < 1:
        raise XqaError("--passages, --length and --answer-len must be positive")
    if args.prompt_tokens < 0 or args.prompt_tokens == 1:
        raise XqaError("--prompt-tokens: 0 (no prompt) or at least 2 (the start token and one more)")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise XqaError("--device cuda: torch sees no CUDA device here")
    lat = []
    if not args.train_only:
        print("latency per question:")
        lat = latency(sizes, passages, args.length, args.answer_len, args.beams, args.reps, args.budget,
                      prompt_tokens=args.prompt_tokens)
    print("training:")
    tr = training(sizes, args.train_passages, args.length, args.train_batch, args.answer_len, args.train_steps,
                  device=args.device, bf16=args.bf16, checkpointing=args.gradient_checkpointing)
    if args.train_only:
        from xqa.tools.lib.reader import train_table

        where = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"CPU, {torch.get_num_threads()} threads"
        table = f"FiD training step on {where}, {args.answer_len} answer tokens\n\n" + train_table(tr)
    else:
        table = format_tables(lat, tr, torch.get_num_threads(), args.length, args.answer_len, args.beams,
                              args.prompt_tokens)
    print()
    print(table)
    if args.json:
        write_json_atomic(args.json, {"threads": torch.get_num_threads(), "length": args.length,
                                      "prompt_tokens": args.prompt_tokens,
                                      "latency": [asdict(r) for r in lat], "training": [asdict(r) for r in tr]})
    return 0


def _bench_span(args: argparse.Namespace) -> int:
    """p50/p95 seconds per question for the span reader reading N real paragraphs (one question
    at a time, as the demo reads), for each N of --passages."""
    import gzip
    import json
    import statistics
    import time

    import torch

    from pathlib import Path

    from xqa.artifacts import write_json_atomic
    from xqa.data.corpus import CORPUS_DIR
    from xqa.encoders.runtime import INT8_FILE
    from xqa.pipeline import load_reader
    from xqa.records import Context, Question

    from xqa.reader_artifacts import readable_reader

    folder = readable_reader(args.span, args.base, log=lambda line: print(line, flush=True), flag="--reader")
    reader = load_reader(folder)
    with gzip.open(CORPUS_DIR / "passages.jsonl.gz", "rt", encoding="utf-8") as f:
        paras = [json.loads(line) for line in f][::5]
    with gzip.open(CORPUS_DIR / "questions.jsonl.gz", "rt", encoding="utf-8") as f:
        questions = [json.loads(line) for line in f][::97][: args.questions]
    counts = [int(x) for x in args.passages.split(",") if x.strip()]
    precisions = [x.strip() for x in args.precisions.split(",") if x.strip()]
    converts = hasattr(reader, "with_precision")   # a FiD: a copy of it in each precision
    if not converts and not hasattr(reader, "settings"):    # a reader with one precision: timed as it loads
        precisions = ["as loaded"]
    if (not converts and "int8" in precisions and not (Path(folder) / INT8_FILE).is_file()
            and hasattr(reader, "cpu_precision")):
        print(f"{args.span} has no {INT8_FILE} (xqa reader unpack writes it): int8 not timed")
        precisions.remove("int8")
    rows = []
    base_reader = reader
    for precision in precisions:
        if converts:
            reader = base_reader.with_precision(precision)
        elif hasattr(reader, "settings"):
            reader.settings.precision = precision
        warm = questions[0]       # loads what the precision needs (the int8 session) before timing
        reader.read([Question(id=warm["id"], question=warm["question"], lang=warm["lang"])],
                    [[Context(id=p["id"], title=p["title"], text=p["text"], lang=p["lang"], score=0.0,
                              source="bench") for p in paras[:1]]])
        for n in counts:
            times = []
            for i, q in enumerate(questions):
                ctxs = [Context(id=p["id"], title=p["title"], text=p["text"], lang=p["lang"], score=0.0,
                                source="bench") for p in paras[i * n: i * n + n]]
                t = time.perf_counter()    # n_context: all N read, as the pipeline asks (a FiD's own may be fewer)
                reader.read([Question(id=q["id"], question=q["question"], lang=q["lang"])], [ctxs], n_context=n)
                times.append(time.perf_counter() - t)
            times.sort()
            row = {"precision": precision, "passages": n, "questions": len(times), "p50_s": statistics.median(times),
                   "p95_s": times[min(len(times) - 1, int(0.95 * (len(times) - 1) + 0.5))]}
            rows.append(row)
            print(f"{precision} {n:>3} passages: p50 {row['p50_s']:.3f} s, p95 {row['p95_s']:.3f} s per question",
                  flush=True)
    from reader.registry import family_of

    family = family_of(folder).name
    print("\n| precision | passages read | p50 s/question | p95 s/question |\n|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['precision']} | {r['passages']} | {r['p50_s']:.3f} | {r['p95_s']:.3f} |")
    print(f"\n{family} reader {args.span}, {torch.get_num_threads()} torch threads, real shipped paragraphs")
    if args.json:
        write_json_atomic(args.json, {"reader": str(args.span), "family": family, "rows": rows,
                                      "threads": torch.get_num_threads()})
    return 0
