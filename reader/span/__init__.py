"""The span reader: an extractive reader on a pretrained multilingual encoder.

- ``reader.span.model``: ``SpanModel`` (encoder + start/end head + relevance head);
- ``reader.span.data``: (question, passage) windows with character offsets;
- ``reader.span.inference``: ``SpanReader`` (load/save/read) and ``SpanOutput``;
- ``reader.span.task``: the training task for ``xqa.training.train``;
- ``reader.span.delta``: a trained reader shipped as the int8 difference to its base encoder.

Evidence fusion over spans is :func:`reader.evidence.fuse_spans`, shared with FiD's.
:data:`FAMILY` is its registration (:mod:`reader.registry`): it loads ``span_reader`` artifacts.
"""
from __future__ import annotations

from pathlib import Path

from reader.base import ReaderFamily


def _load(folder: Path | str):
    from reader.span.inference import SpanReader

    return SpanReader.load(folder)


def _pack(reader: Path, base: Path, out: Path) -> Path:
    from reader.span.delta import pack

    return pack(reader, base, out)


def _unpack(packed: Path, base: Path, out: Path) -> Path:
    from reader.span.delta import unpack

    return unpack(packed, base, out)


def _from_kit(run: Path, base: Path, out: Path) -> Path:
    from reader.span.kit import to_reader

    return to_reader(run, base, out)


def _runtime(folder: Path, threads: int = 0, log=print):
    from reader.span.runtime import build_and_report

    return build_and_report(folder, threads=threads, log=log)


FAMILY = ReaderFamily(
    name="span",
    kinds=("span_reader",),
    load=_load,
    description="An extractive reader on multilingual-e5-small scores answer spans in the passages it "
                "reads, and evidence fusion sums each answer's evidence over those passages. An answer "
                "taken from a passage in another language is shown as written there, marked with that "
                "language.",
    training="xqa.training.span",
    runtime=_runtime,
    packed_kind="span_reader_delta",
    pack=_pack,
    unpack=_unpack,
    kit_kind="span_kit_reader",
    from_kit=_from_kit,
)
