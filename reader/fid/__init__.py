"""Fusion-in-Decoder on (m)T5: one reader family behind ``read(...)`` (see ``reader.base``).

- ``reader.fid.model``: the ``FiD`` module (encoder per passage, decoder over all), model sizes,
  the locality prior, and pointer-generator scoring with a copy head;
- ``reader.fid.inference``: ``FiDReader`` (load/save/read);
- ``reader.fid.data``: passage formatting, tokenization into ``n_context`` blocks, collation,
  copy-attention targets;
- ``reader.fid.spans``: candidates restricted to spans of the passages read;
- ``reader.fid.task``: the training task plugged into ``xqa.training.train``.

:data:`FAMILY` is its registration (:mod:`reader.registry`): it loads ``fid_reader`` artifacts
and, as the fallback, a Hugging Face T5/mT5 name or folder. Importing this package loads
nothing heavy; the modules load torch and transformers.
"""
from __future__ import annotations

from pathlib import Path

from reader.base import ReaderFamily


def _load(folder: Path | str):
    from reader.fid.inference import FiDReader

    return FiDReader.load(folder)


FAMILY = ReaderFamily(
    name="fid",
    kinds=("fid_reader",),
    load=_load,
    description="A Fusion-in-Decoder reader writes the answer from the passages it reads.",
    fallback=True,
    training="xqa.training.fid",
)
