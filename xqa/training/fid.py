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

from dataclasses import dataclass, field

from xqa.training.reader import ReaderTrainConfig

FID_MAX_LENGTH = 192   # tokens per encoded passage
FID_LR = 5e-5
DEFAULT_SIZE = "tiny"  # the random model's size without init


@dataclass
class FidTrainConfig(ReaderTrainConfig):
    size: str | None = None          # tiny | small: random weights of this size (needs tokenizer)
    arch: list[str] = field(default_factory=list)  # KEY=VALUE changes of the size's MT5Config fields
    tokenizer: str | None = None     # tokenizer folder for size (xqa train tokenizer)
    n_context: int = 20              # passages per question (padded)
    sample_answers: bool = False     # train on a random gold answer each time
    train_contexts: str = "top"      # top | gold | answer | evidence (xqa.evaluation.reading.load_examples)
    train_pool: int = 0              # with gold/answer: look for gold passages among the first K (0: all)
    labels: str | None = None        # answer label table (xqa.world.labels): learn to copy an answer's other name
    copy_attention: float = 0.0      # guided cross-attention loss weight (0: off)
    generator_share: float = 0.1     # pointer-generator gate with copy_attention (0: product scoring)
    decoder_prompt: bool = False     # the decoder reads 'question: Q lang: L answer:' first
    eval_span_beams: int = -1        # validation span candidates (-1: 8 with copy_attention, else greedy)


CONFIG = FidTrainConfig   # the training entry of the FiD family (reader.fid.FAMILY.training)


def summary(result: dict, config: FidTrainConfig) -> str:
    """What ``xqa train reader`` says when done."""
    return f"reader written to {config.out}/best: " + ", ".join(f"{k}={v}" for k, v in result.items())


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
    if not c.train:
        raise XqaError("--arch fid needs --train (retrieval results to train on)")
    if c.copy_attention < 0:
        raise XqaError(f"--copy-attention must be >= 0 (a loss weight), got {c.copy_attention}")
    if not 0.0 <= c.generator_share <= 1.0:
        raise XqaError(f"--generator-share must be between 0 and 1 (0: off), got {c.generator_share}")
    if c.threads:
        torch.set_num_threads(c.threads)
    max_length = c.max_length or FID_MAX_LENGTH
    lr = FID_LR if c.lr is None else c.lr
    if c.init and c.arch:
        raise XqaError("--set changes a random-init architecture (--config), not a checkpoint (--init)")
    if c.init:
        reader = FiDReader.load(c.init, device="cpu", max_length=max_length,
                                max_answer_len=c.max_answer_len, n_context=c.n_context)
    else:
        if not c.tokenizer:
            raise XqaError("--config needs --tokenizer (or give --init)")
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
                       log_every=c.log_every, group_by_length=c.group_by_length)
    n_params = sum(p.numel() for p in reader.model.parameters())
    if main_process():
        print(f"FiD reader: {n_params / 1e6:.1f}M parameters, {len(train_set)} training questions, "
              f"{len(dev_set)} dev questions, {c.n_context} passages x {max_length} tokens")
    return run_loop(task, train_set, loop)


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
