"""The reader: reader families behind one ``read(...)`` contract, and evidence fusion.

Shared by every family:

- ``reader.base``: ``ReaderOutput`` (what ``read`` returns) and the ``Reader`` protocol;
- ``reader.evidence``: ``fuse_evidence`` (pure numpy) and the reader-only ranking;
- ``reader.tuning``: coarse-to-fine grid search of the fusion weights β, γ;
- ``reader.scoring``: EM/F1 of a reader's answers with an injected scorer.

One sub-package per family:

- ``reader.fid``: Fusion-in-Decoder on (m)T5 (``FiD``, ``FiDReader``, its data and training task).

Names are imported lazily (``from reader import FiDReader`` loads torch and
transformers only then), so importing ``reader`` costs nothing.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ReaderOutput": "reader.base",
    "fuse_evidence": "reader.evidence",
    "reader_only": "reader.evidence",
    "build_answer": "reader.evidence",
    "FusionParams": "reader.evidence",
    "tune_fusion": "reader.tuning",
    "FiD": "reader.fid.model",
    "FiDReader": "reader.fid.inference",
    "FiDCollator": "reader.fid.data",
    "FiDTask": "reader.fid.task",
}

__all__ = [
    "FiD", "FiDCollator", "FiDReader", "FiDTask", "FusionParams", "ReaderOutput",
    "build_answer", "fuse_evidence", "reader_only", "tune_fusion",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'reader' has no attribute {name!r}")
