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

from reader.base import ReaderFamily
from xqa.lazy import function

FAMILY = ReaderFamily(
    name="span",
    kinds=("span_reader",),
    load=function("reader.span.inference:SpanReader.load"),
    description="An extractive reader on multilingual-e5-small scores answer spans in the passages it "
                "reads, and evidence fusion sums each answer's evidence over those passages. An answer "
                "taken from a passage in another language is shown as written there, marked with that "
                "language.",
    training="xqa.training.span",
    runtime=function("reader.span.runtime:build_and_report"),
    packed_kind="span_reader_delta",
    pack=function("reader.span.delta:pack"),
    unpack=function("reader.span.delta:unpack"),
    kit_kind="span_kit_reader",
    from_kit=function("reader.span.kit:to_reader"),
)
