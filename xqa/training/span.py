"""The extractive span reader on a pretrained encoder, trained on real QA data.

Input: ``xqa data train``'s files — ``train`` (questions with answers, their paragraph in
``positive_ids`` and BM25 hard negatives in ``negative_ids``), ``passages`` and, for
validation, ``dev``. ``init`` is an encoder folder (``xqa convert e5``'s) or a span reader to
continue from; or ``kit`` (``xqa reader kit``) holds the questions, paragraphs and encoder in
one folder. ``OUT/best`` is the reader (with a kit: what training changed).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from xqa.training.reader import ReaderTrainConfig

SPAN_MAX_LENGTH = 256   # tokens per window
SPAN_STRIDE = 64        # tokens two windows of one passage share
SPAN_LR = 1e-4


# The fields' metadata are the options of ``xqa train reader --family span`` (:mod:`xqa.training.reader`).
@dataclass
class SpanTrainConfig(ReaderTrainConfig):
    passages: str | None = field(default=None, metadata={
        "help": "passage file the questions' positive_ids and negative_ids point into"})
    layers: int = field(default=0, metadata={
        "help": "keep the encoder's first N layers (0: all); half the layers read twice as fast"})
    negatives: int = field(default=1, metadata={
        "help": "negative passages per question in a batch (its BM25 negatives, topped up at random)"})
    # None: 64, or the span reader's own where --init is one
    stride: int | None = field(default=None, metadata={
        "min": 0, "help": "tokens shared by two windows of a long passage, less than half of --max-length "
                          "(default: 64, or a quarter of a shorter --max-length; a span reader given to "
                          "--init keeps its own unless --max-length is given)"})
    train_embeddings: bool = field(default=False, metadata={
        "help": "train the word-embedding matrix too (frozen by default: 96M of e5-small's 118M "
                "parameters; frozen, a CPU step is cheaper and the shipped weights need none of it)"})
    per_source: int = field(default=0, metadata={
        "metavar": "N", "help": "at most N training questions from one source set (0: all), sampled with --seed"})
    # None: the encoder's
    dropout: float | None = field(default=None, metadata={
        "min": 0.0, "max": 1.0, "help": "hidden dropout (default: the encoder's)"})


CONFIG = SpanTrainConfig   # the training entry of the span family (reader.span.FAMILY.training)


def default_stride(max_length: int) -> int:
    """64 tokens, or a quarter of a shorter window."""
    return min(SPAN_STRIDE, max_length // 4)


def summary(result: dict, config: SpanTrainConfig) -> str:
    """What ``xqa train reader --family span`` says when done."""
    what = ("what training changed (xqa reader pack --reader OUT adds it to the encoder)" if config.kit
            else "span reader")
    state = "stopped at the time limit, " if result.get("stopped") else ""
    from xqa.training.loop import written

    best = result.get("best")
    kept = (f"kept: step {result.get('best_step')}, dev F1 {best:.4f}" if isinstance(best, (int, float))
            else "no dev score")
    done = f"{what} {written(result)} {config.out}/best ({state}step {result['step']}; {kept})"
    if config.kit or result.get("stopped"):
        return done
    return done + f"\nanswer with it: xqa ask \"…\" --reader {config.out} (or xqa answer … --reader {config.out})"


def train(config: SpanTrainConfig, scorer=None) -> dict:
    """Train the span reader; ``scorer(prediction, answers, lang) -> (EM, F1)`` validates it
    (default: :func:`xqa.evaluation.reading.make_scorer` of ``config.eval_mode``). The loop's
    result (``step``, ``best`` dev F1, ``stopped``, ...)."""
    import torch

    from reader.span.data import check_layout
    from reader.span.inference import SpanReader
    from reader.span.task import SpanTask, load_training_questions
    from xqa.errors import XqaError
    from xqa.io import read_passages
    from xqa.training.loop import init_distributed
    from xqa.training.loop import train as run_loop

    c = config
    if c.kit:
        return _train_kit(c)
    if scorer is None:
        from xqa.evaluation.reading import make_scorer

        scorer = make_scorer(c.eval_mode)
    if not c.init:
        raise XqaError("--family span needs --init: an encoder folder (xqa convert e5 --out DIR) or a span reader")
    if not c.passages:
        raise XqaError("--family span needs --passages (xqa data train's passages.jsonl)")
    if c.threads:
        torch.set_num_threads(c.threads)
    info = init_distributed()
    say = print if info.main else (lambda *a, **k: None)
    max_length = c.max_length or SPAN_MAX_LENGTH
    from pathlib import Path

    from xqa.artifacts import is_complete

    init = Path(c.init)
    if (init / "config.json").is_file() and (init / "delta.safetensors").is_file():
        raise XqaError(f"{init} is a packed reader (its difference to the encoder): unpack it first, "
                       f"'xqa reader unpack --base E5 --out DIR' (or use the embedded build's reader, "
                       f"build/embedded/reader), and give DIR to --init")
    resumes = is_complete(init) and (init / "encoder").is_dir() or (init / "best" / "encoder").is_dir()
    if not resumes:   # an encoder to start from: said before the training files are read
        from xqa.artifacts import check_model_source

        check_model_source(c.init, "the encoder a span reader starts from")
    if not c.train:
        raise XqaError("--family span needs --train (xqa data train's train.jsonl) or --kit")
    passages = {p.id: p for p in read_passages(c.passages)}
    train_ex = load_training_questions(c.train, c.train_limit, c.per_source, c.seed, passages=passages)
    questions = len(train_ex)
    drawn = ""
    if c.mix is not None:
        from reader.span.kit import mixed_order

        names = sorted({e.get("source", "") for e in train_ex})
        order = mixed_order([names.index(e.get("source", "")) for e in train_ex], c.mix,
                            _draws(c, len(train_ex), init_distributed().processes), c.seed)
        train_ex = [train_ex[i] for i in order]
        drawn = f" ({len(train_ex)} draws, mix alpha {c.mix})"
        c = replace(c, epochs=1.0)
    dev_ex = load_training_questions(c.dev, passages=passages, role="dev") if c.dev else []
    if resumes:
        reader = SpanReader.load(init, runtime=False)
        have = reader.model.encoder.config.num_hidden_layers
        if c.layers and c.layers != have:
            raise XqaError(f"--layers {c.layers}: --init {init} is a span reader of {have} layers, which it keeps; "
                           f"to train one of {c.layers} layers, start from the encoder (xqa convert e5's folder)")
        # the window it reads in: the reader's own, or the one given (saved with it)
        layout = {k: v for k, v in (("max_length", c.max_length), ("stride", c.stride)) if v is not None}
        if layout:
            if c.stride is None:
                layout["stride"] = default_stride(c.max_length)
            reader.settings = replace(reader.settings, **layout)
            check_layout(reader.settings.max_length, reader.settings.stride)
        if c.max_answer_len != _default("max_answer_len"):   # given: the longest answer it picks
            reader.settings = replace(reader.settings, max_answer_len=c.max_answer_len)
    else:
        stride = default_stride(max_length) if c.stride is None else c.stride
        check_layout(max_length, stride)
        torch.manual_seed(c.seed)   # the new heads' initial weights: --seed's, the same each run
        reader = SpanReader.from_encoder(init, layers=c.layers, max_length=max_length, stride=stride,
                                         max_answer_len=c.max_answer_len)
    if c.dropout is not None:
        for m in reader.model.encoder.modules():
            if isinstance(m, torch.nn.Dropout) and m.p > 0:
                m.p = c.dropout
    if not c.train_embeddings:
        reader.model.freeze_embeddings()
    n_train = sum(p.numel() for p in reader.model.parameters() if p.requires_grad)
    from xqa.training.loop import dev_said

    say(f"{questions} training questions{drawn}, {dev_said(len(dev_ex), c.dev_limit)}, {len(passages)} passages; "
        f"{reader.model.encoder.config.num_hidden_layers} layers, {n_train / 1e6:.1f}M trained parameters")
    task = SpanTask(reader, passages, negatives=c.negatives, dev=dev_ex, scorer=scorer,
                    dev_questions=c.dev_limit or len(dev_ex))
    # the stride and answer length it reads with are recorded, not None or the option's default:
    # the same run given --stride 64 or left to the default is the same run, and a checkpoint
    # recorded with the number resumes
    used = replace(config, stride=reader.settings.stride, max_answer_len=reader.settings.max_answer_len)
    return run_loop(task, train_ex, _loop(c), progress=True, settings=asdict(used), init_from_best=True,
                    trains="a span reader")


def _default(name: str):
    """The default of :class:`SpanTrainConfig`'s field ``name``."""
    from dataclasses import fields

    return next(f.default for f in fields(SpanTrainConfig) if f.name == name)


def _loop(c: SpanTrainConfig):
    from xqa.training.loop import TrainConfig

    return TrainConfig(out_dir=c.out, batch_size=c.batch_size, epochs=c.epochs, max_steps=c.max_steps,
                       lr=c.lr if c.lr is not None else SPAN_LR, weight_decay=c.weight_decay,
                       warmup_steps=c.warmup_steps, grad_accum=c.grad_accum, max_grad_norm=c.max_grad_norm,
                       eval_every=c.eval_every, save_every=c.save_every, log_every=c.log_every, seed=c.seed,
                       bf16=c.bf16, group_by_length=c.group_by_length,
                       gradient_checkpointing=c.gradient_checkpointing, max_minutes=c.max_minutes)


def _draws(c: SpanTrainConfig, n: int, processes: int) -> float:
    """Draws of the mix, in training-set sizes: ``epochs``, or what ``max_steps`` takes when
    that is more (so that a long run draws afresh instead of repeating one draw)."""
    if not c.max_steps:
        return c.epochs
    per_step = c.batch_size * c.grad_accum * processes
    return max(c.epochs, c.max_steps * per_step / max(1, n))


def kit_order(c, kit, processes: int):
    """``(question indices, alpha)``: the kit's training questions drawn over its sets by the
    mix (``c.mix``, default :data:`reader.span.kit.MIX_ALPHA`), as many draws as ``c`` trains on,
    cut to ``c.train_limit``."""
    from reader.span.kit import MIX_ALPHA, mixed_order

    alpha = MIX_ALPHA if c.mix is None else c.mix
    sets = kit.arrays["train.set"]
    order = mixed_order(sets, alpha, _draws(c, len(sets), processes), c.seed)
    return (order[: c.train_limit] if c.train_limit else order), alpha


def _train_kit(c: SpanTrainConfig) -> dict:
    """Train from a kit (:mod:`reader.span.kit`); ``epochs`` draws of the training set's size,
    mixed over the sets by ``mix``."""
    import torch

    from reader.span.kit import Kit, KitSpanTask, mix_table
    from xqa.errors import XqaError
    from xqa.training.loop import init_distributed
    from xqa.training.loop import train as run_loop

    if c.threads:
        torch.set_num_threads(c.threads)
    for flag, given in (("--init", c.init), ("--train", c.train), ("--passages", c.passages),
                        ("--layers", c.layers), ("--train-embeddings", c.train_embeddings),
                        ("--per-source", c.per_source), ("--max-length", c.max_length),
                        ("--stride", c.stride is not None), ("--dev", c.dev),
                        ("--max-answer-len", c.max_answer_len != _default("max_answer_len"))):
        if given:
            raise XqaError(f"--kit holds the questions, dev questions, paragraphs, encoder, layers and windows "
                           f"(xqa reader kit --layers, --max-length, --stride, --max-answer-len); {flag} does not "
                           f"go with it (the word embeddings stay frozen: the kit holds only the tokens its "
                           f"data uses)")
    info = init_distributed()
    kit = Kit(c.kit)
    torch.manual_seed(c.seed)   # the new heads' initial weights: --seed's, the same each run
    task = KitSpanTask(kit, negatives=c.negatives, dev_questions=c.dev_limit or 10 ** 9)
    if c.dropout is not None:
        for m in task.model.encoder.modules():
            if isinstance(m, torch.nn.Dropout) and m.p > 0:
                m.p = c.dropout
    task.model.freeze_embeddings()
    order, alpha = kit_order(c, kit, info.processes)
    if info.main:
        n_train = sum(p.numel() for p in task.model.parameters() if p.requires_grad)
        print(f"kit {c.kit}: {len(kit)} training questions, {task.dev_questions} dev questions, "
              f"{len(kit.arrays['passages.lang'])} paragraphs; {kit.config['encoder_config']['num_hidden_layers']} "
              f"layers, {n_train / 1e6:.1f}M trained parameters; {len(order)} draws (mix alpha {alpha}) on "
              f"{info.device}")
        for row in mix_table(kit.arrays["train.set"], kit.config["sets"], alpha):
            print(f"  {row['set']:<10} {row['questions']:>6} questions  {row['share']:6.1%} of draws  "
                  f"{row['passes_per_epoch'] * len(order) / len(kit):5.2f} passes")
    return run_loop(task, [int(i) for i in order], _loop(replace(c, epochs=1.0)), progress=True,
                    settings=asdict(replace(c, stride=kit.settings.stride, max_answer_len=kit.settings.max_answer_len)),
                    trains="a span reader")
