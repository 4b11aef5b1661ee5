"""What the two readers' training shares: the training files, validation and the loop's settings."""
from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from xqa.evaluation.reading import EVAL_MODES


# The fields' metadata are the options of ``xqa train reader`` (:mod:`xqa.cli_config`), with each
# family's own (FidTrainConfig, SpanTrainConfig); the help of a setting that defaults to true says
# what its ``--no-...`` switch does.
@dataclass
class ReaderTrainConfig:
    out: str = field(default="", metadata={
        "required": True, "help": "run folder: OUT/best is the reader artifact"})
    train: str | None = field(default=None, metadata={
        "help": "fid: training retrieval results (JSON list or JSONL; FILE:LANG gives the language of records "
                "without one, as FiD's own files); span: xqa data train's or xqa data own's train.jsonl (not "
                "with --kit)"})
    dev: str | None = field(default=None, metadata={
        "help": "dev questions for EM/F1 validation, the best kept (fid: retrieval results; span: xqa data "
                "train's or xqa data own's dev.jsonl)"})
    init: str | None = field(default=None, metadata={
        "help": "start from: fid, a T5/mT5 checkpoint (hub name, HF folder or xqa reader); span, an 'xqa convert "
                "e5' folder, or a span reader to continue from (e.g. build/embedded/reader)"})
    # None: the reader's default
    max_length: int | None = field(default=None, metadata={"min": 1,
        "help": "tokens per encoded passage (fid: truncated, default 192; span: per window, default 256)"})
    max_answer_len: int = field(default=24, metadata={"min": 1, "help": (
        "tokens of the target answer (span: of the longest answer picked; a span reader given to --init "
        "keeps its own unless another number is given)")})
    train_limit: int = field(default=0, metadata={"help": "use only the first N training questions (0: all)"})
    dev_limit: int = field(default=500, metadata={"help": "validate on the first N dev questions (0: all)"})
    eval_mode: str = field(default="official", metadata={
        "choices": EVAL_MODES,
        "help": "EM/F1 for validation: MIA official, its language-aware variant, or simple normalized"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "questions per batch per process"})
    epochs: float = field(default=1.0, metadata={"min": 0.0, "help": "passes over the training set"})
    max_steps: int = field(default=0, metadata={"help": "optimizer steps; >0 overrides --epochs"})
    # None: the reader's default
    lr: float | None = field(default=None, metadata={"min": 0.0,
        "help": "peak learning rate (AdamW, linear schedule; default fid 5e-5, span 1e-4)"})
    weight_decay: float = field(default=0.01, metadata={"min": 0.0, "help": "AdamW weight decay"})
    warmup_steps: int = field(default=0, metadata={"help": "linear warm-up steps"})
    grad_accum: int = field(default=1, metadata={"min": 1, "help": "gradient accumulation steps"})
    max_grad_norm: float = field(default=1.0, metadata={"min": 0.0, "help": "gradient clipping (0: off)"})
    group_by_length: int = field(default=0, metadata={
        "metavar": "W",
        "help": "batch questions of similar input length: sort each window of W batches by length, "
                "then shuffle the batches (less padding, faster steps; 0: plain random batches)"})
    eval_every: int = field(default=0, metadata={"help": "steps between validations (0: every epoch)"})
    save_every: int = field(default=500, metadata={"min": 1, "help": "steps between resumable checkpoints"})
    max_minutes: float = field(default=0.0, metadata={"min": 0.0,
        "help": "stop after this many minutes of training: a checkpoint is saved, OUT/best kept, and "
                "running the command again goes on from there (0: no limit)"})
    log_every: int = field(default=10, metadata={"min": 1, "help": "steps between loss log lines"})
    seed: int = field(default=0, metadata={"help": "random seed (model init and data order)"})
    bf16: bool = field(default=True, metadata={"help": "disable bf16 autocast on CUDA"})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "trade compute for memory (CUDA only)"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch default)"})
    kit: str | None = field(default=None, metadata={
        "metavar": "KIT",
        "help": "train from a kit ('xqa reader kit': the questions, paragraphs and encoder in one small "
                "folder) instead of --train/--passages/--init; OUT/best then holds what training changed, "
                "which 'xqa reader pack --reader OUT' turns into the reader"})
    # None: off (with a kit: reader.span.kit.MIX_ALPHA)
    mix: float | None = field(default=None, metadata={"min": 0.0,
        "metavar": "ALPHA",
        "help": "draw training questions over the source sets with probability proportional to "
                "n_set^ALPHA (temperature sampling: 1 as the data holds them, 0 every set alike); "
                "--epochs counts draws of the whole training set's size (default with --kit: 0.7; "
                "else off)"})


FAMILY_HELP = ("the reader family to train (each registered family with a training entry, reader.registry; "
               "its own options are listed in its group below)")


def training_options(configs: Mapping[str, type], default: str = "fid") -> type:
    """One dataclass holding every option of ``xqa train reader``: ``family`` (the reader family
    to train, a key of ``configs``), then the fields of each family's training config (a
    :class:`ReaderTrainConfig`), each once, in ``configs`` order. :func:`family_config` makes
    the chosen family's config back from it."""
    names = list(configs)
    spec: list[tuple[str, typing.Any, typing.Any]] = [("family", str, field(
        default=default if default in names else names[0],
        metadata={"aliases": ("--arch",), "choices": tuple(names), "help": FAMILY_HELP}))]
    seen = {"family"}
    per_family, varying = _defaults_by_family(configs)
    for cls in configs.values():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.init and f.name not in seen:
                seen.add(f.name)
                if f.name in varying:   # each family's own default
                    said = ", ".join(f"{family} {value}" for family, value in per_family[f.name].items())
                    metadata = {**f.metadata, "help": f"{f.metadata.get('help', '')} (default by family: {said})"}
                    spec.append((f.name, hints[f.name] | None, field(default=None, metadata=metadata)))
                    continue
                spec.append((f.name, hints[f.name], field(default=f.default, default_factory=f.default_factory,
                                                          metadata=f.metadata)))
    return dataclasses.make_dataclass("ReaderTrainingOptions", spec)


def _defaults_by_family(configs: Mapping[str, type]) -> tuple[dict[str, dict[str, typing.Any]], set[str]]:
    """Each option's default in each family's training config that has it, and the options whose
    defaults differ between families."""
    out: dict[str, dict[str, typing.Any]] = {}
    for family, cls in configs.items():
        for f in dataclasses.fields(cls):
            if f.init:
                value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
                out.setdefault(f.name, {})[family] = value
    return out, {name for name, by in out.items() if len(set(map(repr, by.values()))) > 1}


def family_config(options: typing.Any, configs: Mapping[str, type]) -> ReaderTrainConfig:
    """The training config of ``options.family`` (``configs[family]``) from :func:`training_options`'s
    dataclass: the family's own fields, the others' left out."""
    cls = configs[options.family]
    own = {f.name for f in dataclasses.fields(cls) if f.init}
    _, varying = _defaults_by_family(configs)
    given: list[str] = []   # an option of another family given: said, not dropped
    for other in configs.values():
        for f in dataclasses.fields(other):
            flag = "--" + f.name.replace("_", "-")
            if not f.init or f.name in own or flag in given:
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            value = getattr(options, f.name, default)
            if value != default and not (f.name in varying and value is None):
                given.append(flag)
    if given:
        from xqa.errors import XqaError

        raise XqaError(f"{', '.join(given)}: not {'an option' if len(given) == 1 else 'options'} of --family "
                       f"{options.family} (another family's); leave {'it' if len(given) == 1 else 'them'} out")
    # an option whose default differs by family, not given: the chosen family's own default
    return cls(**{name: getattr(options, name) for name in own
                  if not (name in varying and getattr(options, name) is None)})
