"""``xqa bench reader``: FiD CPU latency vs number of passages, and training tokens/s.

Examples::

    xqa bench reader                               # tiny and small, 1/5/20/60 passages
    xqa bench reader --sizes tiny --passages 1,5,20 --json build/bench/reader.json
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", default="tiny,small", help="comma-separated configs: tiny, small (mt5-small shape)")
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
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--json", help="also write the figures to this JSON file")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import torch

    from xqa.artifacts import write_json_atomic
    from xqa.tools.bench.reader import VOCAB, format_tables, latency, training
    from xqa.errors import XqaError

    if args.threads:
        torch.set_num_threads(args.threads)
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
    print("latency per question:")
    lat = latency(sizes, passages, args.length, args.answer_len, args.beams, args.reps, args.budget,
                  prompt_tokens=args.prompt_tokens)
    print("training:")
    tr = training(sizes, args.train_passages, args.length, args.train_batch, args.answer_len, args.train_steps)
    table = format_tables(lat, tr, torch.get_num_threads(), args.length, args.answer_len, args.beams,
                          args.prompt_tokens)
    print()
    print(table)
    if args.json:
        write_json_atomic(args.json, {"threads": torch.get_num_threads(), "length": args.length,
                                      "prompt_tokens": args.prompt_tokens,
                                      "latency": [asdict(r) for r in lat], "training": [asdict(r) for r in tr]})
    return 0
