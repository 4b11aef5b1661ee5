"""The reader: reader families behind one contract, their registry, and evidence fusion.

Shared by every family:

- ``reader.base``: the ``Reader`` protocol (``read``, ``answer``, ``output_from_dict``,
  ``tune_fusion``), ``ReaderFamily`` (one family's registration) and FiD's ``ReaderOutput``;
- ``reader.registry``: the registered families, ``register``, and ``load_reader(folder)``
  (the family from the folder's config.json);
- ``reader.evidence``: ``fuse_evidence`` (pure numpy) and the reader-only ranking;
- ``reader.tuning``: coarse-to-fine grid search of the fusion weights β, γ;
- ``reader.scoring``: EM/F1 of a reader's answers with an injected scorer.

One sub-package per family:

- ``reader.fid``: Fusion-in-Decoder on (m)T5 (``FiD``, ``FiDReader``, its data and training task);
- ``reader.span``: the extractive span reader (``SpanReader``, its data and training task).

Each family package's ``FAMILY`` is its registration.

Names are imported lazily (``from reader import FiDReader`` loads torch and
transformers only then), so importing ``reader`` costs nothing.
"""
from __future__ import annotations

from xqa.lazy import exports

_EXPORTS = {
    "Reader": "reader.base",
    "ReaderFamily": "reader.base",
    "ReaderOutput": "reader.base",
    "load_reader": "reader.registry",
    "register": "reader.registry",
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
    "FiD", "FiDCollator", "FiDReader", "FiDTask", "FusionParams", "Reader", "ReaderFamily", "ReaderOutput",
    "build_answer", "fuse_evidence", "load_reader", "reader_only", "register", "tune_fusion",
]


__getattr__ = exports(__name__, _EXPORTS)  # each name from its module, on first use
