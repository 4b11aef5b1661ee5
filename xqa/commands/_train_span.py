"""``xqa train reader --arch span``: the span reader on a pretrained encoder, on real QA data.

Input: ``xqa data train``'s files — ``--train train.jsonl`` (questions with answers, their
paragraph in ``positive_ids`` and BM25 hard negatives in ``negative_ids``), ``--passages
passages.jsonl`` and, for validation, ``--dev dev.jsonl``. ``--init`` is an encoder folder
(``xqa convert e5``'s) or a span reader to continue from. ``OUT/best`` is the reader.
"""
from __future__ import annotations

import argparse

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
    g.add_argument("--kit", metavar="KIT",
                   help="train from a kit ('xqa reader kit': the questions, paragraphs and encoder in one small "
                        "folder) instead of --train/--passages/--init; OUT/best then holds what training changed, "
                        "which 'xqa reader pack --reader OUT' adds to the converted encoder")
    g.add_argument("--mix", type=float, default=None, metavar="ALPHA",
                   help="draw training questions over the source sets with probability proportional to "
                        "n_set^ALPHA (temperature sampling: 1 as the data holds them, 0 every set alike); "
                        "--epochs counts draws of the whole training set's size (default with --kit: 0.7; "
                        "else off)")


def train_span(args: argparse.Namespace, scorer) -> dict:
    """Train the span reader as ``xqa train reader --arch span`` asks; ``scorer(prediction, answers,
    lang) -> (EM, F1)`` validates it (the command passes the MIA scorer)."""
    import torch

    from reader.span.inference import SpanReader
    from reader.span.task import SpanTask, load_training_questions
    from xqa.errors import XqaError
    from xqa.io import read_passages
    from xqa.training import init_distributed, train

    if args.kit:
        return _train_kit(args)
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
    if not args.train:
        raise XqaError("--arch span needs --train (xqa data train's train.jsonl) or --kit")
    train_ex = load_training_questions(args.train, args.train_limit, args.per_source, args.seed)
    if args.mix is not None:
        from reader.span.kit import mixed_order

        names = sorted({e.get("source", "") for e in train_ex})
        order = mixed_order([names.index(e.get("source", "")) for e in train_ex], args.mix,
                            _draws(args, len(train_ex), init_distributed().processes), args.seed)
        train_ex = [train_ex[i] for i in order]
        args.epochs = 1.0
    dev_ex = load_training_questions(args.dev) if args.dev else []
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
    return train(task, train_ex, _config(args), progress=True)


def _config(args: argparse.Namespace):
    from xqa.training import TrainConfig

    return TrainConfig(out_dir=args.out, batch_size=args.batch_size or SPAN_DEFAULTS["batch_size"],
                         epochs=args.epochs, max_steps=args.max_steps,
                         lr=args.lr if args.lr is not None else SPAN_DEFAULTS["lr"],
                         weight_decay=args.weight_decay, warmup_steps=args.warmup_steps,
                         grad_accum=args.grad_accum, max_grad_norm=args.max_grad_norm,
                         eval_every=args.eval_every, save_every=args.save_every, log_every=args.log_every,
                         seed=args.seed, bf16=not args.no_bf16, group_by_length=args.group_by_length,
                         gradient_checkpointing=args.gradient_checkpointing, max_minutes=args.max_minutes)


def _draws(args: argparse.Namespace, n: int, processes: int) -> float:
    """Draws of the mix, in training-set sizes: ``--epochs``, or what ``--max-steps`` takes when
    that is more (so that a long run draws afresh instead of repeating one draw)."""
    if not args.max_steps:
        return args.epochs
    per_step = (args.batch_size or SPAN_DEFAULTS["batch_size"]) * args.grad_accum * processes
    return max(args.epochs, args.max_steps * per_step / max(1, n))


def _train_kit(args: argparse.Namespace) -> dict:
    """Train from a kit (:mod:`reader.span.kit`); ``--epochs`` draws of the training set's size,
    mixed over the sets by ``--mix``."""
    import torch

    from reader.span.kit import MIX_ALPHA, Kit, KitSpanTask, mix_table, mixed_order
    from xqa.training import init_distributed, train

    if args.threads:
        torch.set_num_threads(args.threads)
    from xqa.errors import XqaError

    for flag, given in (("--init", args.init), ("--train", args.train), ("--passages", args.passages),
                        ("--layers", args.layers), ("--train-embeddings", args.train_embeddings),
                        ("--per-source", args.per_source)):
        if given:
            raise XqaError(f"--kit holds the questions, paragraphs, encoder and layers; {flag} does not go with it "
                           f"(the word embeddings stay frozen: the kit holds only the tokens its data uses)")
    info = init_distributed()
    kit = Kit(args.kit)
    task = KitSpanTask(kit, negatives=args.negatives, dev_questions=args.dev_limit or 10 ** 9)
    if args.dropout is not None:
        for m in task.model.encoder.modules():
            if isinstance(m, torch.nn.Dropout) and m.p > 0:
                m.p = args.dropout
    task.model.freeze_embeddings()
    alpha = MIX_ALPHA if args.mix is None else args.mix
    sets = kit.arrays["train.set"]
    order = mixed_order(sets, alpha, _draws(args, len(sets), info.processes), args.seed)
    if args.train_limit:
        order = order[: args.train_limit]
    if info.main:
        n_train = sum(p.numel() for p in task.model.parameters() if p.requires_grad)
        print(f"kit {args.kit}: {len(kit)} training questions, {task.dev_questions} dev questions, "
              f"{len(kit.arrays['passages.lang'])} paragraphs; {kit.config['encoder_config']['num_hidden_layers']} "
              f"layers, {n_train / 1e6:.1f}M trained parameters; {len(order)} draws (mix alpha {alpha}) on "
              f"{info.device}")
        for row in mix_table(sets, kit.config["sets"], alpha):
            print(f"  {row['set']:<10} {row['questions']:>6} questions  {row['share']:6.1%} of draws  "
                  f"{row['passes_per_epoch'] * len(order) / len(kit):5.2f} passes")
    args.epochs = 1.0
    return train(task, [int(i) for i in order], _config(args), progress=True)
