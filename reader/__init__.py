"""The reader: Fusion-in-Decoder on (m)T5, and evidence fusion.

Modules:

- ``reader.fid``: the ``FiD`` module (encoder per passage, decoder over all) and model configs;
- ``reader.inference``: ``FiDReader`` (load/save/read) and ``ReaderOutput``;
- ``reader.data``: passage formatting, tokenization into ``n_context`` blocks, collation;
- ``reader.evidence``: ``fuse_evidence`` (pure numpy) and the reader-only ranking;
- ``reader.tuning``: coarse-to-fine grid search of the fusion weights β, γ;
- ``reader.task``: the training task plugged into ``xqa.training.train``.

Names are imported lazily (``from reader import FiDReader`` loads torch and
transformers only then), so importing ``reader`` costs nothing.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FiD": "reader.fid",
    "FiDReader": "reader.inference",
    "ReaderOutput": "reader.inference",
    "FiDCollator": "reader.data",
    "fuse_evidence": "reader.evidence",
    "reader_only": "reader.evidence",
    "build_answer": "reader.evidence",
    "FusionParams": "reader.evidence",
    "tune_fusion": "reader.tuning",
    "FiDTask": "reader.task",
}

__all__ = [
    "FiD", "FiDCollator", "FiDReader", "FiDTask", "FusionParams", "ReaderOutput",
    "build_answer", "fuse_evidence", "reader_only", "tune_fusion",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'reader' has no attribute {name!r}")
