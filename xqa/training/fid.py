"""The Fusion-in-Decoder reader (Izacard & Grave, "Leveraging Passage Retrieval with
Generative Models for Open Domain Question Answering", 2021), trained on retrieval results.

Input: retrieval-result files (DPR/FiD layout, JSON list or JSONL). Each question's ``ctxs``
are read in the order given (the fused order); the first ``n_context`` become its passages,
padded to exactly that many. The target is the first gold answer, in the question's language
(``sample_answers`` draws one of them each time instead).

Output ``OUT/`` (:mod:`xqa.training.loop`): ``OUT/best/`` is the reader artifact
(``FiDReader.load(OUT)`` finds it), ``OUT/checkpoint/`` lets a rerun resume.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from xqa.training.reader import ReaderTrainConfig

FID_MAX_LENGTH = 192   # tokens per encoded passage
FID_LR = 5e-5
FID_KIT_LR = 1e-4   # a warm-started FiD from a kit: the span reader's rate on the same encoder
DEFAULT_SIZE = "tiny"  # the random model's size without init


# The fields' metadata are the options of ``xqa train reader`` (:mod:`xqa.training.reader`).
@dataclass
class FidTrainConfig(ReaderTrainConfig):
    # tiny | small: random weights of this size (needs tokenizer); None with init
    size: str | None = field(default=None, metadata={
        "choices": ("tiny", "small"), "aliases": ("--config",),
        "help": f"start from random weights of this size (needs --tokenizer); default {DEFAULT_SIZE}"})
    arch: list[str] = field(default_factory=list, metadata={
        "flag": "--set", "append": True, "metavar": "KEY=VALUE",
        "help": "with --size: change one MT5Config field of the size, e.g. --set num_decoder_layers=3 "
                "(repeatable; integers, floats and strings)"})
    tokenizer: str | None = field(default=None, metadata={"help": "tokenizer folder for --size (xqa train tokenizer)"})
    n_context: int = field(default=20, metadata={"min": 1, "help": "passages per question (padded)"})
    sample_answers: bool = field(default=False, metadata={"help": "train on a random gold answer each time"})
    # xqa.evaluation.reading.load_examples
    train_contexts: str = field(default="top", metadata={
        "choices": ("top", "gold", "answer", "evidence"),
        "help": "training passages: the first N in fused order (top), or the gold passages "
                "(positive_ids / has_answer / answer string) among the first --train-pool plus "
                "the best-ranked others, still in fused order (gold); or as gold, but passages "
                "holding the target answer itself (question's language) first and questions with "
                "no such passage in the pool skipped (answer: learns to copy soonest from scratch); "
                "or as answer, but a question with no such passage trains on its gold passages "
                "(evidence: cross-lingual questions, whose answer is a translation, are kept)"})
    train_pool: int = field(default=0, metadata={
        "help": "with --train-contexts gold/answer: look for gold passages among the first K (0: all)"})
    labels: str | None = field(default=None, metadata={
        "metavar": "FILE",
        "help": "answer label table (JSONL, xqa.world.labels; the embedded world's world/labels.jsonl): a "
                "question whose answer is in none of its training passages but another name of the "
                "answer is (the value as a passage in another language writes it) learns to copy that "
                "name, which the pipeline, given the same table, answers in the question's language"})
    copy_attention: float = field(default=0.0, metadata={"min": 0.0,
        "metavar": "W",
        "help": "guided cross-attention: add W x (-log of the attention one head of the last decoder "
                "layer puts on the answer's tokens in the passages) to the loss; teaches a reader "
                "trained from scratch where to copy from (0: off)"})
    generator_share: float = field(default=0.1, metadata={"min": 0.0, "max": 1.0,
        "metavar": "LAMBDA", "aliases": ("--pointer-mix",),
        "help": "with --copy-attention: score each answer token as LAMBDA x the generator's probability "
                "+ (1 - LAMBDA) x the copy head's mass on it in the passages (a pointer-generator "
                "with a fixed gate), and also read the spans that start where the copy head looks; "
                "saved with the reader. 0: score with the product of the generator's probability "
                "and the copy head's mass (weighted by W) instead"})
    decoder_prompt: bool = field(default=False, metadata={
        "help": "the decoder reads 'question: Q lang: L answer:' before the answer, so its first "
                "answer step (and the copy head's pointer) knows what is asked; saved with the "
                "reader (a reader given to --init that has one keeps it; any other, e.g. a hub mT5, "
                "learns to read one)"})
    decoder_layers: int = field(default=4, metadata={
        "metavar": "N",
        "help": "with --kit or a BERT encoder as --init (e.g. xqa convert e5's folder): a decoder of N layers "
                "warm-started from the encoder's (spread over its depth; cross-attention new; 0: as deep as "
                "the encoder)"})
    share_layers: bool = field(default=False, metadata={
        "help": "with --kit or a BERT --init: the decoder's self-attention and feed-forward are the "
                "encoder's own weights (every layer), only cross-attention and the LM head are new"})
    encoder_init: str | None = field(default=None, metadata={
        "metavar": "DIR",
        "help": "with --kit: start the encoder from this packed span reader (xqa/models/span-reader) "
                "instead of the kit's encoder"})
    overfit: int = field(default=0, metadata={
        "metavar": "N",
        "help": "with --kit: train on N training questions drawn at random, over and over, and validate on "
                "them: a check that the model, data and settings can learn at all (greedy F1 near 1 within "
                "a few hundred steps); 0: the whole kit"})
    eval_span_beams: int = field(default=-1, metadata={
        "metavar": "K",
        "help": "validate with 4 beams plus K passage-span candidates, as the pipeline reads "
                "(-1: 8 with --copy-attention, whose pointer only shows there; else greedy)"})


CONFIG = FidTrainConfig   # the training entry of the FiD family (reader.fid.FAMILY.training)


def _fmt(value) -> str:
    return "none" if value is None else f"{value:.4f}"


def summary(result: dict, config: FidTrainConfig) -> str:
    """What ``xqa train reader`` says when done."""
    from xqa.training.loop import written

    if config.kit:
        from reader.fid.kit import LOSS_TIE_BREAK
        state = "stopped at the time limit, " if result.get("stopped") else ""
        return (f"what training changed (xqa reader pack --reader OUT makes the reader of it) {written(result)} "
                f"{config.out}/best ({state}step {result['step']}; kept: step {result.get('best_step')}, "
                f"F1 less {LOSS_TIE_BREAK:g} x token loss {_fmt(result.get('best'))})")
    return f"reader {written(result)} {config.out}/best: " + ", ".join(f"{k}={v}" for k, v in result.items()
                                                                         if k != "finished_before")


def train(config: FidTrainConfig) -> dict:
    """Build (or load) the reader, read the examples, run the shared loop; the loop's result."""
    import torch
    from transformers import AutoTokenizer

    from reader.fid.data import FiDCollator
    from reader.fid.inference import FiDReader
    from reader.fid.model import check_generator_share
    from reader.fid.task import FiDTask
    from xqa.errors import XqaError
    from xqa.evaluation.reading import load_examples, make_scorer
    from xqa.training.loop import TrainConfig, main_process
    from xqa.training.loop import train as run_loop

    c = config
    if c.kit:
        return _train_kit(c)
    if not c.train:
        raise XqaError("--family fid needs --train (retrieval results to train on) or --kit")
    if c.copy_attention < 0:
        raise XqaError(f"--copy-attention must be >= 0 (a loss weight), got {c.copy_attention}")
    if not 0.0 <= c.generator_share <= 1.0:
        raise XqaError(f"--generator-share must be between 0 and 1 (0: off), got {c.generator_share}")
    if c.threads:
        torch.set_num_threads(c.threads)
    max_length = c.max_length or FID_MAX_LENGTH
    lr = FID_LR if c.lr is None else c.lr
    if c.init and c.size:
        raise XqaError("give --init (a checkpoint) or --size (random weights), not both")
    if c.init and c.arch:
        raise XqaError("--set changes a random-init architecture (--size), not a checkpoint (--init)")
    if c.init and _is_bert(c.init):
        from reader.fid.warm import WarmStart

        reader = FiDReader.warm_start_from(c.init, WarmStart(c.decoder_layers, c.share_layers), max_length=max_length,
                                           max_answer_len=c.max_answer_len, n_context=c.n_context)
        reader.model.t5.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    elif c.init:
        reader = FiDReader.load(c.init, device="cpu", max_length=max_length,
                                max_answer_len=c.max_answer_len, n_context=c.n_context)
    else:
        if not c.tokenizer:
            raise XqaError("--size needs --tokenizer (or give --init)")
        tok = AutoTokenizer.from_pretrained(c.tokenizer)
        reader = FiDReader.from_config(architecture(c.size or DEFAULT_SIZE, c.arch), tok, seed=c.seed,
                                       max_length=max_length, max_answer_len=c.max_answer_len,
                                       n_context=c.n_context)
    reader.decoder_prompt = reader.decoder_prompt or c.decoder_prompt
    labels = None
    if c.labels:
        from xqa.world.labels import AnswerLabels

        labels = AnswerLabels.load(c.labels)
    train_set = load_examples(c.train, c.n_context, c.train_limit, need_answers=True,
                              contexts=c.train_contexts, pool=c.train_pool, labels=labels)
    dev_set = load_examples(c.dev, c.n_context, c.dev_limit, need_answers=True) if c.dev else []
    collator = FiDCollator(reader.tokenizer, c.n_context, max_length, c.max_answer_len,
                           sample_answers=c.sample_answers, seed=c.seed,
                           copy_targets=c.copy_attention > 0, prompt=reader.decoder_prompt,
                           start_id=reader.model.config.decoder_start_token_id)
    task = FiDTask(reader, collator, dev_set, scorer=make_scorer(c.eval_mode),
                   copy_attention=c.copy_attention,
                   eval_span_beams=(8 if c.copy_attention > 0 else 0) if c.eval_span_beams < 0
                   else c.eval_span_beams)
    # after FiDTask, which gives a reader trained with copy_attention its copy head
    reader.model.generator_share = check_generator_share(c.generator_share) if reader.model.copy_head else None
    loop = TrainConfig(out_dir=c.out, batch_size=c.batch_size, epochs=c.epochs, max_steps=c.max_steps, lr=lr,
                       weight_decay=c.weight_decay, warmup_steps=c.warmup_steps, grad_accum=c.grad_accum,
                       max_grad_norm=c.max_grad_norm, eval_every=c.eval_every, save_every=c.save_every,
                       seed=c.seed, bf16=c.bf16, gradient_checkpointing=c.gradient_checkpointing,
                       log_every=c.log_every, group_by_length=c.group_by_length, max_minutes=c.max_minutes)
    n_params = sum(p.numel() for p in reader.model.parameters())
    if main_process():
        print(f"FiD reader: {n_params / 1e6:.1f}M parameters, {len(train_set)} training questions, "
              f"{len(dev_set)} dev questions, {c.n_context} passages x {max_length} tokens")
    return run_loop(task, train_set, loop, settings=asdict(config), init_from_best=True, trains="a FiD reader")


def _is_bert(folder: str) -> bool:
    """Whether ``folder`` is a Hugging Face BERT encoder (a converted e5, a span reader's ``encoder/``)."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("model_type") == "bert"
    except (OSError, ValueError, AttributeError):
        return False


def _train_kit(c: FidTrainConfig) -> dict:
    """Train a warm-started FiD from a kit (:mod:`reader.fid.kit`); the mix as the span reader's."""
    from dataclasses import replace

    import torch

    import random

    from reader.fid.kit import KitFiDTask
    from reader.fid.model import check_generator_share
    from reader.fid.warm import WarmStart
    from reader.span.kit import Kit, mix_table
    from xqa.errors import XqaError
    from xqa.training.loop import init_distributed
    from xqa.training.loop import train as run_loop
    from xqa.training.span import _loop, kit_order

    if c.threads:
        torch.set_num_threads(c.threads)
    for flag, given in (("--init", c.init), ("--train", c.train), ("--size", c.size), ("--tokenizer", c.tokenizer),
                        ("--decoder-prompt", c.decoder_prompt), ("--labels", c.labels)):
        if given:
            raise XqaError(f"--kit holds the questions, paragraphs and encoder; {flag} does not go with it")
    info = init_distributed()
    kit = Kit(c.kit)
    task = KitFiDTask(kit, WarmStart(c.decoder_layers, c.share_layers), n_context=c.n_context,
                      encoder_init=c.encoder_init, max_length=c.max_length, max_answer_len=c.max_answer_len,
                      dev_questions=c.dev_limit or 10 ** 9, seed=c.seed, copy_attention=c.copy_attention,
                      generator_share=check_generator_share(c.generator_share))
    order, alpha = kit_order(c, kit, info.processes)
    if c.overfit:
        picked = random.Random(c.seed).sample(range(len(kit)), min(c.overfit, len(kit)))
        task.validate_on("train", picked)
        draws = c.max_steps * c.batch_size * c.grad_accum * info.processes if c.max_steps else len(order)
        order = (picked * (draws // len(picked) + 1))[: max(draws, len(picked))]
    if info.main:
        n_train = sum(p.numel() for p in task.model.parameters() if p.requires_grad)
        print(f"kit {c.kit}: {len(kit)} training questions, {len(task.eval_indices)} {task.eval_split} questions "
              f"validated, "
              f"{len(kit.arrays['passages.lang'])} paragraphs; FiD of {task.model.t5.config.encoder.num_hidden_layers} "
              f"encoder and {task.model.decoder_layers} decoder layers{' (shared)' if c.share_layers else ''}, "
              f"{n_train / 1e6:.1f}M trained parameters, {c.n_context} passages x {task.max_length} tokens; "
              f"{len(order)} draws (mix alpha {alpha}) on {info.device}")
        if c.overfit:
            print(f"  overfit check: {len(set(order))} training questions, over and over, validated on themselves")
        for row in [] if c.overfit else mix_table(kit.arrays["train.set"], kit.config["sets"], alpha):
            print(f"  {row['set']:<10} {row['questions']:>6} questions  {row['share']:6.1%} of draws")
    loop = _loop(replace(c, epochs=1.0, lr=FID_KIT_LR if c.lr is None else c.lr))
    return run_loop(task, [int(i) for i in order], loop, progress=True, settings=asdict(c), trains="a FiD reader")


def architecture(size: str, settings: list[str]):
    """The named size, or (with ``KEY=VALUE`` settings) its fields changed: an explicit dict."""
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
