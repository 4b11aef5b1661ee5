"""Fusion-in-Decoder on (m)T5: one reader family behind ``read(...)`` (see ``reader.base``).

- ``reader.fid.model``: the ``FiD`` module (encoder per passage, decoder over all), model sizes,
  the locality prior, and pointer-generator scoring with a copy head;
- ``reader.fid.inference``: ``FiDReader`` (load/save/read);
- ``reader.fid.data``: passage formatting, tokenization into ``n_context`` blocks, collation,
  copy-attention targets;
- ``reader.fid.spans``: candidates restricted to spans of the passages read;
- ``reader.fid.task``: the training task plugged into ``xqa.training.train``;
- ``reader.fid.warm``: an encoder–decoder warm-started from an encoder-only checkpoint (BERT2BERT);
- ``reader.fid.kit``: that FiD trained from the span reader's kit, and the reader made of a run;
- ``reader.fid.delta``: a warm-started FiD shipped as int8 over the converted encoder.

:data:`FAMILY` is its registration (:mod:`reader.registry`): it loads ``fid_reader`` artifacts
and, as the fallback, a Hugging Face T5/mT5 name or folder. Importing this package loads
nothing heavy; the modules load torch and transformers.
"""
from __future__ import annotations

from pathlib import Path

from reader.base import ReaderFamily
from xqa.lazy import function


def _warm_started(folder: Path) -> bool:
    """A FiD warm-started from an encoder (the real-text one): its CPU precisions are checked; a
    generated world's tiny mT5 reads in fp32 as trained."""
    import json

    try:
        return bool(json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("warm_start"))
    except (OSError, ValueError, AttributeError):
        return False


FAMILY = ReaderFamily(
    name="fid",
    kinds=("fid_reader",),
    load=function("reader.fid.inference:FiDReader.load"),
    description="A Fusion-in-Decoder reader writes the answer from the passages it reads.",
    fallback=True,
    training="xqa.training.fid",
    packed_kind="fid_reader_delta",
    pack=function("reader.fid.delta:pack"),
    unpack=function("reader.fid.delta:unpack"),
    kit_kind="fid_kit_reader",
    from_kit=function("reader.fid.kit:to_reader"),
    runtime=function("reader.fid.runtime:build_and_report"),
    runtime_wanted=_warm_started,
)
