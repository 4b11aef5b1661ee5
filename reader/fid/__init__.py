"""Fusion-in-Decoder on (m)T5: one reader family behind ``read(...)`` (see ``reader.base``).

- ``reader.fid.model``: the ``FiD`` module (encoder per passage, decoder over all), model sizes,
  the locality prior, and pointer-generator scoring with a copy head;
- ``reader.fid.inference``: ``FiDReader`` (load/save/read);
- ``reader.fid.data``: passage formatting, tokenization into ``n_context`` blocks, collation,
  copy-attention targets;
- ``reader.fid.spans``: candidates restricted to spans of the passages read;
- ``reader.fid.task``: the training task plugged into ``xqa.training.train``.

Importing this package loads nothing heavy; the modules load torch and transformers.
"""
