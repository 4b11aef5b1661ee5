"""The SentencePiece tokenizer of a model trained from scratch (the embedded default's)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TokenizerTrainConfig:
    # the options of ``xqa train tokenizer`` (:mod:`xqa.cli_config`)
    passages: str = field(metadata={"help": "passages (JSONL or DPR TSV) to learn from"})
    out: str = field(metadata={"help": "output tokenizer folder"})
    questions: list[str] = field(default_factory=list, metadata={"help": "question sets to learn from as well"})
    vocab_size: int = field(default=8000, metadata={"min": 1, "help": "target vocabulary size"})
    overwrite: bool = field(default=False, metadata={"help": "retrain even if OUT is complete"})


def train(config: TokenizerTrainConfig) -> Path:
    """Learn the tokenizer from the passages' titles and texts and the questions and their
    answers; returns the tokenizer folder."""
    from itertools import chain

    from xqa.io import read_passages, read_questions
    from xqa.tokenizer import train_tokenizer

    def texts():
        for p in read_passages(config.passages):
            yield p.title
            yield p.text
        for path in config.questions:
            for q in read_questions(path):
                yield q.question
                yield from chain(q.answers, q.answers_en)

    return Path(train_tokenizer(texts(), config.out, vocab_size=config.vocab_size, overwrite=config.overwrite))
