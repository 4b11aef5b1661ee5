"""``xqa train reader --arch span``: the span reader on a pretrained encoder, on real QA data.

Input: ``xqa data train``'s files — ``--train train.jsonl`` (questions with answers, their
paragraph in ``positive_ids`` and BM25 hard negatives in ``negative_ids``), ``--passages
passages.jsonl`` and, for validation, ``--dev dev.jsonl``. ``--init`` is an encoder folder
(``xqa convert e5``'s) or a span reader to continue from. ``OUT/best`` is the reader.
"""
from __future__ import annotations

import argparse
import random
from collections import defaultdict

SPAN_DEFAULTS = dict(max_length=256, lr=1e-4, batch_size=16)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("span reader (--arch span)")
    g.add_argument("--passages", help="passage file the questions' positive_ids and negative_ids point into")
    g.add_argument("--layers", type=int, default=0,
                   help="keep the encoder's first N layers (0: all); half the layers read twice as fast")
    g.add_argument("--negatives", type=int, default=1,
                   help="negative passages per question in a batch (its BM25 negatives, topped up at random)")
    g.add_argument("--stride", type=int, default=64, help="tokens shared by two windows of a long passage")
    g.add_argument("--train-embeddings", action="store_true",
                   help="train the word-embedding matrix too (frozen by default: 96M of e5-small's 118M "
                        "parameters; frozen, a CPU step is cheaper and the shipped weights need none of it)")
    g.add_argument("--per-source", type=int, default=0, metavar="N",
                   help="at most N training questions from one source set (0: all), sampled with --seed")
    g.add_argument("--dropout", type=float, default=None, help="hidden dropout (default: the encoder's)")


def load_examples(path: str, limit: int = 0, per_source: int = 0, seed: int = 0) -> list[dict]:
    from xqa.errors import InputError, jsonl_objects

    rows = []
    for n, obj in jsonl_objects(path):
        for key in ("question", "answers", "positive_ids"):
            if key not in obj:
                raise InputError(path, n, f"missing field {key!r} (make training data with 'xqa data train')")
        if not isinstance(obj["answers"], list) or not obj["answers"]:
            raise InputError(path, n, "field 'answers' should be a non-empty list")
        if not isinstance(obj["positive_ids"], list) or not obj["positive_ids"]:
            raise InputError(path, n, "field 'positive_ids' should be a non-empty list")
        rows.append(obj)
    if per_source:
        by: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            by[r.get("source", "")].append(r)
        rng = random.Random(seed)
        rows = [r for src in sorted(by) for r in (rng.sample(by[src], per_source) if len(by[src]) > per_source
                                                  else by[src])]
        rng.shuffle(rows)
    return rows[:limit] if limit else rows


def train_span(args: argparse.Namespace, scorer) -> dict:
    """Train the span reader as ``xqa train reader --arch span`` asks; ``scorer(prediction, answers,
    lang) -> (EM, F1)`` validates it (the command passes the MIA scorer)."""
    import torch

    from reader.span.inference import SpanReader
    from reader.span.task import SpanTask
    from xqa.errors import XqaError
    from xqa.io import read_passages
    from xqa.training import TrainConfig, init_distributed, train

    if not args.init:
        raise XqaError("--arch span needs --init: an encoder folder (xqa convert e5 --out DIR) or a span reader")
    if not args.passages:
        raise XqaError("--arch span needs --passages (xqa data train's passages.jsonl)")
    if args.threads:
        torch.set_num_threads(args.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    max_length = args.max_length or SPAN_DEFAULTS["max_length"]
    from pathlib import Path

    from xqa.artifacts import is_complete

    init = Path(args.init)
    if is_complete(init) and (init / "encoder").is_dir() or (init / "best" / "encoder").is_dir():
        reader = SpanReader.load(init, runtime=False)
    else:
        reader = SpanReader.from_encoder(init, layers=args.layers, max_length=max_length, stride=args.stride,
                                         max_answer_len=args.max_answer_len)
    if args.dropout is not None:
        for m in reader.model.encoder.modules():
            if isinstance(m, torch.nn.Dropout) and m.p > 0:
                m.p = args.dropout
    if not args.train_embeddings:
        reader.model.freeze_embeddings()
    train_ex = load_examples(args.train, args.train_limit, args.per_source, args.seed)
    dev_ex = load_examples(args.dev) if args.dev else []
    passages = {p.id: p for p in read_passages(args.passages)}
    missing = [e["id"] for e in train_ex + dev_ex if e["positive_ids"][0] not in passages]
    if missing:
        raise XqaError(f"{len(missing)} questions name a paragraph that is not in {args.passages} "
                       f"(e.g. {missing[0]!r})")
    n_train = sum(p.numel() for p in reader.model.parameters() if p.requires_grad)
    say(f"{len(train_ex)} training questions, {len(dev_ex)} dev questions, {len(passages)} passages; "
        f"{reader.model.encoder.config.num_hidden_layers} layers, {n_train / 1e6:.1f}M trained parameters")
    task = SpanTask(reader, passages, negatives=args.negatives, dev=dev_ex, scorer=scorer,
                    dev_questions=args.dev_limit or len(dev_ex))
    config = TrainConfig(out_dir=args.out, batch_size=args.batch_size or SPAN_DEFAULTS["batch_size"],
                         epochs=args.epochs, max_steps=args.max_steps,
                         lr=args.lr if args.lr is not None else SPAN_DEFAULTS["lr"],
                         weight_decay=args.weight_decay, warmup_steps=args.warmup_steps,
                         grad_accum=args.grad_accum, max_grad_norm=args.max_grad_norm,
                         eval_every=args.eval_every, save_every=args.save_every, log_every=args.log_every,
                         seed=args.seed, bf16=not args.no_bf16, group_by_length=args.group_by_length,
                         gradient_checkpointing=args.gradient_checkpointing)
    return train(task, train_ex, config, progress=True)
