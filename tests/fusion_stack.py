"""A tiny but real retrieval stack for the fusion / SPAR / contract tests, built once per session.

The small embedded world (``xqa world build --size small``, <1 s), a
SentencePiece tokenizer, BM25 indexes of every language but Telugu (so Telugu
questions exercise the "no BM25 index" path), a randomly initialised tiny
dense bi-encoder and its FAISS index, Λ trained for a few steps by
``xqa train lexical`` against the BM25 teacher, and the SPAR index built by
``xqa index spar``, the DHR index (``xqa index dhr``, 64 slices) and BM25 over
the tokenizer's pieces (``xqa index pieces``). About half a minute on two
cores; every piece is the project's real code, nothing is mocked.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

NO_BM25_LANG = "te"
_CACHE: dict[str, Stack] = {}


@dataclass
class Stack:
    root: Path
    world: Path
    passages: list = field(default_factory=list)
    dev: list = field(default_factory=list)
    _loaded: dict = field(default_factory=dict)

    @property
    def passages_file(self) -> Path:
        return self.world / "passages.jsonl"

    @property
    def bm25(self) -> Path:
        return self.root / "bm25"

    @property
    def dense(self) -> Path:
        return self.root / "dense"

    @property
    def dense_model(self) -> Path:
        return self.root / "dense_model"

    @property
    def lexical(self) -> Path:
        return self.root / "lexical"

    @property
    def spar(self) -> Path:
        return self.root / "spar"

    @property
    def roman(self) -> Path:
        return self.root / "roman"

    def sparse_retriever(self):
        from retriever.sparse import SparseRetriever

        if "sparse" not in self._loaded:
            self._loaded["sparse"] = SparseRetriever.load(self.bm25, threads=2)
        return self._loaded["sparse"]

    def roman_retriever(self):
        from retriever.sparse import SparseRetriever

        if "roman" not in self._loaded:
            self._loaded["roman"] = SparseRetriever.load(self.roman, threads=2)
        return self._loaded["roman"]

    def dense_retriever(self):
        from retriever.dense import DenseRetriever

        if "dense" not in self._loaded:
            self._loaded["dense"] = DenseRetriever.load(self.dense)
        return self._loaded["dense"]

    def dhr_retriever(self):
        from retriever.dhr import DhrRetriever

        if "dhr" not in self._loaded:
            self._loaded["dhr"] = DhrRetriever.load(self.root / "dhr")
        return self._loaded["dhr"]

    def pieces_retriever(self):
        from retriever.bm25_aug.pieces import PiecesRetriever

        if "pieces" not in self._loaded:
            self._loaded["pieces"] = PiecesRetriever.load(self.root / "pieces")
        return self._loaded["pieces"]

    def spar_retriever(self):
        from retriever.spar import SparRetriever

        if "spar" not in self._loaded:
            self._loaded["spar"] = SparRetriever.load(self.spar, mu=0.5)
        return self._loaded["spar"]


def _cli(*argv) -> None:
    from xqa.cli import main

    code = main([str(a) for a in argv])
    assert code == 0, f"xqa {' '.join(map(str, argv))} exited {code}"


def build_stack(root: Path) -> Stack:
    """Build (once per session) and return the stack under ``root``."""
    if "stack" in _CACHE:
        return _CACHE["stack"]
    import torch

    from retriever.dense.encode import build_indexes, encode_shard, model_info
    from retriever.dense.index import IndexParams
    from retriever.dense.model import BiEncoder
    from retriever.sparse import build_sparse_indexes
    from xqa.io import read_passages, read_questions
    from xqa.tokenizer import train_tokenizer

    torch.manual_seed(0)
    root = Path(root)
    world = root / "world"
    _cli("world", "build", "--out", world, "--size", "small", "--seed", "3")
    passages = list(read_passages(world / "passages.jsonl"))
    train_tokenizer((t for p in passages for t in (p.title, p.text)), root / "tok", vocab_size=1200)
    build_sparse_indexes([p for p in passages if p.lang != NO_BM25_LANG], root / "bm25", threads=2,
                         progress=False)
    build_sparse_indexes(passages, root / "roman", threads=2, progress=False, cross_script=True)
    model = BiEncoder.from_scratch(root / "tok", "tiny", seed=1, query_max_length=32, passage_max_length=64)
    model.save(root / "dense_model")
    encode_shard(model.encode_passages, passages, root / "dense", progress=False)
    build_indexes(root / "dense", 1, IndexParams(), model_info(root / "dense_model", root / "dense"),
                  progress=False)
    _cli("train", "lexical", "--passages", world / "passages.jsonl", "--bm25", root / "bm25",
         "--tokenizer", root / "tok", "--config", "tiny", "--max-steps", 4, "--batch-size", 8,
         "--query-max-length", 32, "--passage-max-length", 64, "--max-queries", 150, "--dev-size", 20,
         "--out", root / "lexical",
         "--quiet")
    _cli("index", "spar", "--dense", root / "dense", "--lexical", root / "lexical", "--passages",
         world / "passages.jsonl", "--out", root / "spar", "--quiet")
    _cli("index", "dhr", "--dense", root / "dense", "--passages", world / "passages.jsonl", "--out", root / "dhr",
         "--slices", 64, "--lambda", 1.0, "--quiet")
    _cli("index", "pieces", "--passages", world / "passages.jsonl", "--encoder", root / "dense_model" / "tokenizer",
         "--out", root / "pieces", "--quiet")
    stack = Stack(root, world, passages, read_questions(world / "dev.jsonl"))
    _CACHE["stack"] = stack
    return stack


def world_config(world: Path) -> dict:
    return json.loads((world / "config.json").read_text(encoding="utf-8"))
