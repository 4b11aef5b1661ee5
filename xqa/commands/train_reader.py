"""``xqa train reader``: train the Fusion-in-Decoder reader on retrieval results.

Input: retrieval-result files (DPR/FiD layout, JSON list or JSONL). Each
question's ``ctxs`` are read in the order given (the fused order); the first
``--n-context`` become its passages, padded to exactly that many. The target
is the first gold answer, in the question's language (``--sample-answers``
draws one of them each time instead).

Output ``OUT/`` (see ``xqa.training``): ``OUT/best/`` is the reader artifact
(``FiDReader.load(OUT)`` finds it), ``OUT/checkpoint/`` lets a rerun resume.
Several processes: ``torchrun --nproc-per-node G -m xqa.cli train reader ...``.
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from xqa.commands import _train_span

    p.add_argument("--arch", dest="family", choices=("fid", "span"), default="fid",
                   help="fid: Fusion-in-Decoder on (m)T5 (generates); span: the extractive reader on a "
                        "pretrained encoder (--init an 'xqa convert e5' folder), trained on 'xqa data train' "
                        "files")
    p.add_argument("--train",
                   help="fid: training retrieval results (JSON list or JSONL); span: xqa data train's train.jsonl "
                        "(not with --kit)")
    p.add_argument("--dev", help="dev retrieval results for EM/F1 validation (best kept)")
    p.add_argument("--out", required=True, help="run folder: OUT/best is the reader artifact")
    init = p.add_mutually_exclusive_group()
    init.add_argument("--init", help="start from a T5/mT5 checkpoint (hub name, HF folder or xqa reader)")
    init.add_argument("--config", choices=["tiny", "small"],
                      help="start from random weights of this size (needs --tokenizer); default tiny")
    p.add_argument("--set", dest="arch", action="append", default=[], metavar="KEY=VALUE",
                   help="with --config: change one MT5Config field of the size, e.g. --set num_decoder_layers=3 "
                        "(repeatable; integers, floats and strings)")
    p.add_argument("--tokenizer", help="tokenizer folder for --config (xqa train tokenizer)")
    p.add_argument("--n-context", type=int, default=20, help="passages per question (padded)")
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per encoded passage (fid: truncated, default 192; span: per window, default 256)")
    p.add_argument("--max-answer-len", type=int, default=24, help="tokens of the target answer")
    p.add_argument("--sample-answers", action="store_true", help="train on a random gold answer each time")
    p.add_argument("--train-contexts", choices=["top", "gold", "answer", "evidence"], default="top",
                   help="training passages: the first N in fused order (top), or the gold passages "
                        "(positive_ids / has_answer / answer string) among the first --train-pool plus "
                        "the best-ranked others, still in fused order (gold); or as gold, but passages "
                        "holding the target answer itself (question's language) first and questions with "
                        "no such passage in the pool skipped (answer: learns to copy soonest from scratch); "
                        "or as answer, but a question with no such passage trains on its gold passages "
                        "(evidence: cross-lingual questions, whose answer is a translation, are kept)")
    p.add_argument("--labels", metavar="FILE",
                   help="answer label table (JSONL, xqa.world.labels; the embedded world's world/labels.jsonl): a "
                        "question whose answer is in none of its training passages but another name of the "
                        "answer is (the value as a passage in another language writes it) learns to copy that "
                        "name, which the pipeline, given the same table, answers in the question's language")
    p.add_argument("--copy-attention", type=float, default=0.0, metavar="W",
                   help="guided cross-attention: add W x (-log of the attention one head of the last decoder "
                        "layer puts on the answer's tokens in the passages) to the loss; teaches a reader "
                        "trained from scratch where to copy from (0: off)")
    p.add_argument("--generator-share", type=float, default=0.1, metavar="LAMBDA",
                   help="with --copy-attention: score each answer token as LAMBDA x the generator's probability "
                        "+ (1 - LAMBDA) x the copy head's mass on it in the passages (a pointer-generator "
                        "with a fixed gate), and also read the spans that start where the copy head looks; "
                        "saved with the reader. 0: score with the product of the generator's probability "
                        "and the copy head's mass (weighted by W) instead")
    # the spelling xqa/embedded.py still passes; not shown in --help
    p.add_argument("--pointer-mix", dest="generator_share", type=float, help=argparse.SUPPRESS)
    p.add_argument("--decoder-prompt", action="store_true",
                   help="the decoder reads 'question: Q lang: L answer:' before the answer, so its first "
                        "answer step (and the copy head's pointer) knows what is asked; saved with the "
                        "reader (a reader given to --init that has one keeps it; any other, e.g. a hub mT5, "
                        "learns to read one)")
    p.add_argument("--eval-span-beams", type=int, default=-1, metavar="K",
                   help="validate with 4 beams plus K passage-span candidates, as the pipeline reads "
                        "(-1: 8 with --copy-attention, whose pointer only shows there; else greedy)")
    p.add_argument("--train-pool", type=int, default=0,
                   help="with --train-contexts gold/answer: look for gold passages among the first K (0: all)")
    p.add_argument("--train-limit", type=int, default=0, help="use only the first N training questions (0: all)")
    p.add_argument("--dev-limit", type=int, default=500, help="validate on the first N dev questions (0: all)")
    p.add_argument("--eval-mode", choices=["official", "lang_aware", "simple"], default="official",
                   help="EM/F1 for validation: MIA official, its language-aware variant, or simple normalized")
    p.add_argument("--batch-size", type=int, default=16, help="questions per batch per process")
    p.add_argument("--epochs", type=float, default=1.0, help="passes over the training set")
    p.add_argument("--max-steps", type=int, default=0, help="optimizer steps; >0 overrides --epochs")
    p.add_argument("--lr", type=float, default=None,
                   help="peak learning rate (AdamW, linear schedule; default fid 5e-5, span 1e-4)")
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    p.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up steps")
    p.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping (0: off)")
    p.add_argument("--group-by-length", type=int, default=0, metavar="W",
                   help="batch questions of similar input length: sort each window of W batches by length, "
                        "then shuffle the batches (less padding, faster steps; 0: plain random batches)")
    p.add_argument("--eval-every", type=int, default=0, help="steps between validations (0: every epoch)")
    p.add_argument("--save-every", type=int, default=500, help="steps between resumable checkpoints")
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop after this many minutes of training: a checkpoint is saved, OUT/best kept, and "
                        "running the command again goes on from there (0: no limit)")
    p.add_argument("--log-every", type=int, default=10, help="steps between loss log lines")
    p.add_argument("--seed", type=int, default=0, help="random seed (model init and data order)")
    p.add_argument("--no-bf16", action="store_true", help="disable bf16 autocast on CUDA")
    p.add_argument("--gradient-checkpointing", action="store_true",
                   help="trade compute for memory (CUDA only)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    _train_span.add_arguments(p)


def is_gold(result, ctx) -> bool:
    """A passage is gold when the question lists it (``positive_ids``), the retrieval file marks
    it ``has_answer``, or it contains a gold answer (question language or English)."""
    from reader.evidence import normalize_answer, occurs_in

    q = result.question
    if ctx.id in set(q.meta.get("positive_ids") or ()) or ctx.has_answer:
        return True
    passage = normalize_answer(f"{ctx.title} {ctx.text}")
    return any(occurs_in(normalize_answer(a), passage) for a in (*q.answers, *q.answers_en))


def holds_target(result, ctx) -> bool:
    """Does the passage contain the training target (the first answer, question's language)?"""
    from reader.evidence import normalize_answer, occurs_in

    answers = result.question.answers
    return bool(answers) and occurs_in(normalize_answer(answers[0]), normalize_answer(f"{ctx.title} {ctx.text}"))


def load_examples(path: str, n_context: int, limit: int = 0, need_answers: bool = False,
                  contexts: str = "top", pool: int = 0, labels=None) -> list[dict]:
    """Example dicts (``reader.fid.data``) from a retrieval-result file, ctxs in the given order;
    ``contexts="gold"`` makes sure the gold passages among the first ``pool`` are included;
    ``contexts="answer"`` puts passages holding the target first and skips questions without one;
    ``contexts="evidence"`` does the same but skips only questions with no gold passage at all.

    With ``labels`` (:class:`xqa.world.labels.AnswerLabels`) a question whose answer is in none of
    its passages but another name of the answer is (the value as a passage in another language
    writes it) is trained to copy that name: the pipeline writes it in the question's language
    with the same table."""
    from reader.fid.data import example_from_records, select_contexts
    from xqa.errors import XqaError
    from xqa.io import read_results
    from xqa.training import main_process

    results = read_results(path)
    if limit:
        results = results[:limit]
    examples, skipped, relabelled = [], 0, 0
    for r in results:
        ctxs = list(r.ctxs)
        if contexts in ("gold", "answer", "evidence"):
            ctxs = ctxs[:pool] if pool else ctxs
            gold = [int(is_gold(r, c)) for c in ctxs]
            if contexts in ("answer", "evidence"):
                gold = [2 if holds_target(r, c) else g for c, g in zip(ctxs, gold)]
                if (2 if contexts == "answer" else 1) > max(gold, default=0):
                    skipped += 1
                    continue
            ctxs = select_contexts(ctxs, n_context, gold)
        ex = example_from_records(r.question, ctxs[:n_context])
        if need_answers and not ex["answers"]:
            continue
        if labels is not None and ex["answers"]:
            relabelled += _copy_target(ex, labels)
        examples.append(ex)
    if skipped and main_process():
        where = f"among its first {pool} passages" if pool else "among its passages"
        what = "holds the answer" if contexts == "answer" else "is gold"
        print(f"{path}: {skipped} of {len(results)} questions skipped: none {where} {what} "
              f"(--train-contexts {contexts})")
    if labels is not None and main_process():
        print(f"{path}: {relabelled} of {len(examples)} questions train on their answer's name in a passage "
              "in another language (--labels)")
    if not examples:
        raise XqaError(f"{path}: no usable questions" + (" with answers" if need_answers else ""))
    return examples


def _copy_target(ex: dict, labels) -> int:
    """Replace ``ex["answers"]`` by the answer's name as one of its passages writes it, when no
    passage holds the answer itself; 1 if replaced."""
    from reader.evidence import normalize_answer, occurs_in

    passages = [normalize_answer(f"{t} {x}") for t, x in zip(ex["titles"], ex["texts"])]
    if any(occurs_in(normalize_answer(a), p) for a in ex["answers"] for p in passages):
        return 0
    names = [[(f, normalize_answer(f)) for f in labels.forms(a)] for a in ex["answers"]]   # once per question
    for p in passages:
        for answer_names in names:
            found = [f for f, key in answer_names if occurs_in(key, p)]
            if found:
                ex["answers"] = [max(found, key=len)]   # the longest: "the Nile" over "Nile"
                return 1
    return 0


def make_scorer(mode: str):
    """(prediction, answers, lang) -> (EM, F1): the MIA official scorer, or the simple fallback."""
    from reader.scoring import simple_score

    if mode == "simple":
        return simple_score
    try:
        from xqa.evaluation.mia import score_answer
    except ImportError:  # the evaluation package is optional for the reader
        print("xqa.evaluation.mia unavailable: using simple normalized EM/F1")
        return simple_score

    def score(prediction: str, answers, lang: str) -> tuple[float, float]:
        return score_answer(prediction, list(answers), lang, mode=mode)

    return score


def run(args: argparse.Namespace) -> int:
    if args.family == "span":
        from xqa.commands._train_span import train_span
        from xqa.training import main_process

        result = train_span(args, make_scorer(args.eval_mode))
        if main_process():
            what = "what training changed (xqa reader pack --reader OUT adds it to the encoder)" if args.kit \
                else "span reader"
            state = "stopped at the time limit, " if result.get("stopped") else ""
            print(f"{what} written to {args.out}/best ({state}step {result['step']}, best f1 {result.get('best')})")
        return 0
    if not args.train:
        from xqa.errors import XqaError

        raise XqaError("--arch fid needs --train (retrieval results to train on)")
    import torch
    from transformers import AutoTokenizer

    from reader.fid.data import FiDCollator
    from reader.fid.model import check_generator_share
    from reader.fid.inference import FiDReader
    from reader.fid.task import FiDTask
    from xqa.errors import XqaError
    from xqa.training import TrainConfig, main_process, train

    if args.copy_attention < 0:
        raise XqaError(f"--copy-attention must be >= 0 (a loss weight), got {args.copy_attention}")
    if not 0.0 <= args.generator_share <= 1.0:
        raise XqaError(f"--generator-share must be between 0 and 1 (0: off), got {args.generator_share}")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.max_length = args.max_length or 192
    args.lr = 5e-5 if args.lr is None else args.lr
    if args.init and args.arch:
        raise XqaError("--set changes a random-init architecture (--config), not a checkpoint (--init)")
    if args.init:
        reader = FiDReader.load(args.init, device="cpu", max_length=args.max_length,
                                max_answer_len=args.max_answer_len, n_context=args.n_context)
    else:
        if not args.tokenizer:
            raise XqaError("--config needs --tokenizer (or give --init)")
        tok = AutoTokenizer.from_pretrained(args.tokenizer)
        reader = FiDReader.from_config(_architecture(args.config or "tiny", args.arch), tok, seed=args.seed,
                                       max_length=args.max_length,
                                       max_answer_len=args.max_answer_len, n_context=args.n_context)
    reader.decoder_prompt = reader.decoder_prompt or args.decoder_prompt
    labels = None
    if args.labels:
        from xqa.world.labels import AnswerLabels

        labels = AnswerLabels.load(args.labels)
    train_set = load_examples(args.train, args.n_context, args.train_limit, need_answers=True,
                              contexts=args.train_contexts, pool=args.train_pool, labels=labels)
    dev_set = load_examples(args.dev, args.n_context, args.dev_limit, need_answers=True) if args.dev else []
    collator = FiDCollator(reader.tokenizer, args.n_context, args.max_length, args.max_answer_len,
                           sample_answers=args.sample_answers, seed=args.seed,
                           copy_targets=args.copy_attention > 0, prompt=reader.decoder_prompt,
                           start_id=reader.model.config.decoder_start_token_id)
    task = FiDTask(reader, collator, dev_set, scorer=make_scorer(args.eval_mode),
                   copy_attention=args.copy_attention,
                   eval_span_beams=(8 if args.copy_attention > 0 else 0) if args.eval_span_beams < 0
                   else args.eval_span_beams)
    # after FiDTask, which gives a reader trained with --copy-attention its copy head
    reader.model.generator_share = check_generator_share(args.generator_share) if reader.model.copy_head else None
    config = TrainConfig(out_dir=args.out, batch_size=args.batch_size, epochs=args.epochs,
                         max_steps=args.max_steps, lr=args.lr, weight_decay=args.weight_decay,
                         warmup_steps=args.warmup_steps, grad_accum=args.grad_accum,
                         max_grad_norm=args.max_grad_norm, eval_every=args.eval_every,
                         save_every=args.save_every, seed=args.seed, bf16=not args.no_bf16,
                         gradient_checkpointing=args.gradient_checkpointing, log_every=args.log_every,
                         group_by_length=args.group_by_length)
    n_params = sum(p.numel() for p in reader.model.parameters())
    if main_process():
        print(f"FiD reader: {n_params / 1e6:.1f}M parameters, {len(train_set)} training questions, "
              f"{len(dev_set)} dev questions, {args.n_context} passages x {args.max_length} tokens")
    result = train(task, train_set, config)
    if main_process():
        print(f"reader written to {args.out}/best: " + ", ".join(f"{k}={v}" for k, v in result.items()))
    return 0


def _architecture(size: str, settings: list[str]):
    """The named size, or (with ``--set KEY=VALUE``) its fields changed: an explicit dict."""
    from reader.fid.model import SIZES
    from xqa.errors import XqaError

    if not settings:
        return size
    arch = dict(SIZES[size])
    for item in settings:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise XqaError(f"--set {item!r}: expected KEY=VALUE, e.g. num_decoder_layers=3")
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        else:
            value = raw
        arch[key] = value
    from transformers import MT5Config

    unknown = [k for k in arch if not hasattr(MT5Config(), k)]
    if unknown:
        raise XqaError(f"--set: {', '.join(unknown)} is not an MT5Config field")
    return arch
