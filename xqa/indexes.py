"""Build the retrieval indexes of a passage file: one typed config and one function per index.

Each ``build_*`` reads the passages (:func:`xqa.io.read_passages`: JSONL, ``.gz``, DPR TSV),
builds its index with the retriever's own builder and returns the index's summary; each
``describe_*`` is that summary as one line for people. ``xqa index ...`` and the build
recipes (:mod:`xqa.build`) call them.

- BM25, one Lucene index per language, or one cross-script (romanized) index of all
  languages: :func:`build_sparse` (:func:`retriever.sparse.build_sparse_indexes`);
- dense (FAISS per language), encoded in resumable shards that several processes may share:
  :func:`build_dense` (:mod:`retriever.dense.encode`);
- SPAR, ``[P(p) ; PΛ(p)]`` in one FAISS index (SPAR, Chen et al. 2022): :func:`build_spar`;
- DHR, densified BM25 over e5 pieces with the dense vectors (Lin & Lin, "A Dense
  Representation Framework for Lexical and Semantic Matching", 2023): :func:`build_dhr`;
- BM25 over multilingual-e5 pieces, all languages together: :func:`build_pieces`.

Importing this module loads nothing heavy: torch, FAISS and Lucene load where an index is built.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from xqa.errors import XqaError

Log = Callable[[str], None]


def _default_threads() -> int:
    """Lucene indexing threads: 2, or 1 on a one-core machine."""
    return min(2, os.cpu_count() or 1)


# ------------------------------------------------------------------ BM25

@dataclass
class SparseIndexConfig:
    passages: str | Path
    out: str | Path
    lang: str | None = None             # language of passages that carry none (DPR TSV)
    threads: int | None = None          # Lucene indexing threads (None: 2, or 1 on a one-core machine)
    batch_size: int = 2000              # passages handed to Lucene per call
    overwrite: bool = False
    optimize: bool = True               # merge each index into one segment
    cross_script: bool = False          # one romanized index of every language
    # cross-script: a question leaves out the tokens in at least this share of its language's
    # passages (None: retriever.sparse.index.STOP_FRACTION)
    stop_fraction: float | None = None
    progress: bool = True


def build_sparse(cfg: SparseIndexConfig) -> dict[str, Any]:
    """The BM25 index(es) of ``cfg.passages`` in ``cfg.out``; their summary
    (:func:`retriever.sparse.build_sparse_indexes`) with ``seconds``."""
    from retriever.sparse import build_sparse_indexes
    from retriever.sparse.index import STOP_FRACTION
    from xqa.io import read_passages

    threads = _default_threads() if cfg.threads is None else cfg.threads
    if threads < 1 or cfg.batch_size < 1:
        raise XqaError("--threads and --batch-size must be at least 1")
    if cfg.stop_fraction is not None and not cfg.cross_script:
        raise XqaError("--stop-fraction applies to the cross-script index: add --cross-script")
    stop_fraction = STOP_FRACTION if cfg.stop_fraction is None else cfg.stop_fraction
    if not 0.0 <= stop_fraction <= 1.0:
        raise XqaError(f"--stop-fraction must be between 0 and 1, got {stop_fraction}")
    start = time.perf_counter()
    summary = build_sparse_indexes(read_passages(cfg.passages, lang=cfg.lang), cfg.out,
                                   threads=threads, overwrite=cfg.overwrite,
                                   batch_size=cfg.batch_size, optimize=cfg.optimize,
                                   progress=cfg.progress, cross_script=cfg.cross_script,
                                   stop_fraction=stop_fraction)
    return {**summary, "seconds": time.perf_counter() - start}


def describe_sparse(summary: dict[str, Any], out: str | Path) -> str:
    """A table of the languages, their analyzers (fallbacks marked) and sizes, and a total line."""
    lines = [f"{'lang':<8} {'passages':>9} {'MB':>8}  analyzer"]
    for lang, info in summary["languages"].items():
        mark = "  [FALLBACK]" if info["fallback"] else ""
        lines.append(f"{lang:<8} {info['num_passages']:>9} {info['index_bytes'] / 1e6:>8.2f}  "
                     f"{info['analyzer_description']}{mark}")
        if info.get("stop_tokens"):
            lists = ", ".join(f"{k} {len(v)}" for k, v in info["stop_tokens"].items())
            lines.append(f"{'':<8} stop tokens (in >= {info['stop_fraction']:.0%} of a language's passages): {lists}")
    reused = f" (reused: {', '.join(summary['reused'])})" if summary["reused"] else ""
    where = "one cross-script index" if summary.get("cross_script") else f"{len(summary['languages'])} languages"
    lines.append(f"{summary['num_passages']} passages in {where}, "
                 f"{summary['seconds']:.1f} s, Lucene {summary['lucene']} / Anserini {summary['anserini']} "
                 f"on Java {summary['java']} -> {out}{reused}")
    return "\n".join(lines)


# ------------------------------------------------------------------ dense

@dataclass
class DenseIndexConfig:
    model: str | Path                   # bi-encoder folder
    passages: str | Path
    out: str | Path
    lang: str | None = None
    shard_id: int | None = None         # encode only this shard (None: every shard)
    num_shards: int = 1
    chunk_size: int = 20_000            # passages per resumable chunk inside a shard
    index: str = "flat"                 # FAISS index per language: flat, hnsw, ivfpq
    fp16: bool = False                  # embeddings and the flat index in float16
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    nlist: int = 0                      # IVF-PQ lists (0: about 4*sqrt(n))
    pq_m: int = 0                       # IVF-PQ sub-quantisers (0: dim/4)
    pq_bits: int = 8
    nprobe: int = 16
    batch_size: int = 64                # passages per encoder batch
    max_length: int = 0                 # passage tokens the encoder reads (0: the model's own)
    device: str | None = None           # torch device (None: cuda when available, else cpu)
    threads: int = 0                    # torch CPU threads (0: torch's default)
    precision: str | None = None        # CPU precision of a converted encoder (None: its own setting)
    encode_only: bool = False           # encode the shard(s) and stop
    overwrite: bool = False             # rebuild the FAISS indexes of a finished folder
    progress: bool = True


def build_dense(cfg: DenseIndexConfig, log: Log = print) -> dict[str, Any] | None:
    """Encode the shards still to encode (resumable), then build the FAISS indexes when every
    shard is done; the index's ``config.json``, or None when no index was built (encode only,
    shards left for other processes, or a finished index and no ``overwrite``)."""
    import torch

    from retriever.dense.encode import build_indexes, encode_shard, model_info, shard_done
    from retriever.dense.index import IndexParams
    from retriever.dense.model import BiEncoder
    from xqa.artifacts import is_complete, write_json_atomic
    from xqa.io import read_passages

    out = Path(cfg.out)
    n = cfg.num_shards
    if n < 1:
        raise XqaError("--num-shards must be at least 1")
    if cfg.shard_id is not None and not 0 <= cfg.shard_id < n:
        raise XqaError(f"--shard-id {cfg.shard_id} must be in [0, {n})")
    if is_complete(out):
        if not cfg.overwrite:
            log(f"{out} is a finished dense index; nothing to do (--overwrite rebuilds its FAISS indexes)")
            return None
        (out / "config.json").unlink()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)

    model_dir = Path(cfg.model)
    info = model_info(model_dir, out)
    _check_same_model(out, info, cfg.fp16)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "encoding.json", {"model": info, "num_shards": n, "fp16": cfg.fp16,
                                              **({"max_length": cfg.max_length} if cfg.max_length else {})})

    todo = [cfg.shard_id] if cfg.shard_id is not None else list(range(n))
    todo = [s for s in todo if not shard_done(out, s, n)]
    if todo:
        device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model = BiEncoder.load(model_dir, device=device)
        if cfg.max_length:
            model.config.passage_max_length = cfg.max_length
        if cfg.precision:
            model.config.precision = cfg.precision
        precision = model.cpu_precision() if device == "cpu" else f"{device} bf16"
        if cfg.progress:
            log(f"encoding with {model_dir} in {precision}")
        for s in todo:
            # the bar of each chunk's encoding moves per batch (a chunk is the unit a rerun resumes from)
            stats = encode_shard(lambda ps: model.encode_passages(ps, batch_size=cfg.batch_size,
                                                                  progress=cfg.progress),
                                 read_passages(cfg.passages, lang=cfg.lang), out, s, n,
                                 fp16=cfg.fp16, chunk_size=cfg.chunk_size, progress=False,
                                 meta={"precision": precision})
            log(f"shard {s}/{n}: {stats['encoded']} passages encoded, {stats['skipped']} already done")
    missing = [s for s in range(n) if not shard_done(out, s, n)]
    if cfg.encode_only:
        return None
    if missing:
        log(f"{len(missing)} shard(s) still to encode ({', '.join(map(str, missing[:10]))}); "
            f"the indexes are built when all are done")
        return None
    params = IndexParams(kind=cfg.index, fp16=cfg.fp16, hnsw_m=cfg.hnsw_m,
                         ef_construction=cfg.ef_construction, ef_search=cfg.ef_search,
                         nlist=cfg.nlist, pq_m=cfg.pq_m, pq_bits=cfg.pq_bits, nprobe=cfg.nprobe)
    build_indexes(out, n, params, info, progress=cfg.progress)
    index = json.loads((out / "config.json").read_text(encoding="utf-8"))
    langs = ", ".join(f"{k}:{v}" for k, v in sorted(index["languages"].items()))
    log(f"dense index written to {out}: {index['passages']} passages, {cfg.index}, dim {index['dim']} ({langs})")
    return index


def _check_same_model(out: Path, info: dict, fp16: bool) -> None:
    """Refuse to mix shards encoded by different models or precisions."""
    prev = out / "encoding.json"
    if not prev.is_file():
        return
    old = json.loads(prev.read_text(encoding="utf-8"))
    if old["model"]["abs_path"] != info["abs_path"]:
        raise XqaError(f"{out} holds shards encoded by {old['model']['abs_path']}, not {info['abs_path']}; "
                       f"use another --out or remove {out}")
    if old.get("fp16") != fp16 and (out / "shards").is_dir():
        raise XqaError(f"{out} holds shards stored with fp16={old.get('fp16')}; pass the same --fp16 "
                       f"or remove {out / 'shards'}")


# ------------------------------------------------------------------ SPAR

@dataclass
class SparIndexConfig:
    dense: str | Path                   # finished dense index folder
    lexical: str | Path                 # Λ: a bi-encoder folder or its training run
    passages: str | Path                # the passages the dense index holds
    out: str | Path
    lang: str | None = None
    mode: str = "concat"                # concat: [P ; PΛ]; sum: P + PΛ (equal dims)
    index_type: str | None = None       # FAISS index type (None: the dense index's)
    batch_size: int = 64
    device: str = "cpu"                 # torch device encoding Λ
    threads: int = 0
    overwrite: bool = False
    progress: bool = True


def build_spar(cfg: SparIndexConfig) -> dict[str, Any]:
    """The SPAR index (:func:`retriever.spar.index.build_spar_index`); its config with ``seconds``."""
    import torch

    from retriever.dense.encode import index_config
    from retriever.dense.index import IndexParams
    from retriever.spar.index import build_spar_index
    from xqa.io import read_passages

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    params = None
    if cfg.index_type:
        base = dict(index_config(cfg.dense).get("index", {}))
        base["kind"] = cfg.index_type
        params = IndexParams(**base)
    t0 = time.perf_counter()
    index = build_spar_index(cfg.dense, cfg.lexical, read_passages(cfg.passages, lang=cfg.lang), cfg.out,
                             mode=cfg.mode, params=params, overwrite=cfg.overwrite, batch_size=cfg.batch_size,
                             device=cfg.device, progress=cfg.progress)
    return {**index, "seconds": time.perf_counter() - t0}


def describe_spar(index: dict[str, Any], out: str | Path) -> str:
    return (f"SPAR index ({index['mode']}, {index['dim']} dims = {index['dense_dim']} dense"
            f"{' + ' if index['mode'] == 'concat' else ' = '}{index['lexical_dim']} Λ) of {index['passages']} passages "
            f"in {len(index['languages'])} languages → {out} ({index['seconds']:.0f} s"
            f"{', dense vectors reused' if index['reused_dense_shards'] else ''})")


# ------------------------------------------------------------------ DHR

@dataclass
class DhrIndexConfig:
    dense: str | Path                   # finished dense index folder
    passages: str | Path
    out: str | Path
    lang: str | None = None
    slices: int | None = None           # M (None: retriever.dlr.index.DEFAULT_SLICES)
    strided: bool = False               # slice m = dims {m, m+M, ...} instead of [mN, (m+1)N)
    lam: float | None = None            # λ recorded as the index's dense weight (None: DEFAULT_LAMBDA)
    batch_size: int = 1024              # passages per tokenizer call
    overwrite: bool = False
    progress: bool = True


def build_dhr(cfg: DhrIndexConfig) -> dict[str, Any]:
    """The DHR index (:func:`retriever.dlr.index.build_dhr_index`); its config with ``seconds``."""
    from retriever.dlr.index import DEFAULT_LAMBDA, DEFAULT_SLICES, build_dhr_index
    from xqa.io import read_passages

    t0 = time.perf_counter()
    index = build_dhr_index(cfg.dense, read_passages(cfg.passages, lang=cfg.lang), cfg.out,
                            slices=DEFAULT_SLICES if cfg.slices is None else cfg.slices, strided=cfg.strided,
                            lam=DEFAULT_LAMBDA if cfg.lam is None else cfg.lam, batch_size=cfg.batch_size,
                            overwrite=cfg.overwrite, progress=cfg.progress)
    return {**index, "seconds": time.perf_counter() - t0}


def describe_dhr(index: dict[str, Any], out: str | Path) -> str:
    return (f"DHR index of {index['passages']} passages in {len(index['languages'])} languages: "
            f"{index['slices']} × {index['slice_dims']} {'strided' if index['strided'] else 'contiguous'} slices "
            f"(|V| = {index['vocab_size']}, {index['collided_pieces']} of {index['pieces']} passage pieces lost to "
            f"collisions) + {index['dense_dim']}-dim dense, λ = {index['lam']:g}; {index['bytes'] / 2**20:.1f} MiB "
            f"→ {out} ({index['seconds']:.1f} s)")


# ------------------------------------------------------------------ BM25 over e5 pieces

@dataclass
class PiecesIndexConfig:
    passages: str | Path
    encoder: str | Path                 # encoder folder whose tokenizer makes the pieces
    out: str | Path
    lang: str | None = None
    threads: int | None = None          # Lucene indexing threads (None: 2, or 1 on a one-core machine)
    batch_size: int = 1000
    overwrite: bool = False
    progress: bool = True


def build_pieces(cfg: PiecesIndexConfig) -> dict[str, Any]:
    """The pieces index (:func:`retriever.bm25aug.pieces.build_pieces_index`); its config with ``seconds``."""
    from retriever.bm25aug.pieces import build_pieces_index
    from xqa.io import read_passages

    threads = _default_threads() if cfg.threads is None else cfg.threads
    if threads < 1 or cfg.batch_size < 1:
        raise XqaError("--threads and --batch-size must be at least 1")
    t0 = time.perf_counter()
    index = build_pieces_index(read_passages(cfg.passages, lang=cfg.lang), cfg.encoder, cfg.out,
                               threads=threads, progress=cfg.progress, overwrite=cfg.overwrite,
                               batch_size=cfg.batch_size)
    return {**index, "seconds": time.perf_counter() - t0}


def describe_pieces(index: dict[str, Any], out: str | Path) -> str:
    return (f"pieces index of {index['passages']} passages ({index['pieces']} pieces, "
            f"{len(index['languages'])} languages, {index['index_bytes'] / 1e6:.1f} MB) → {out} "
            f"({index['seconds']:.0f} s)")
