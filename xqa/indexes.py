"""Build the retrieval indexes of a passage file: one typed config and one function per index.

Each ``build_*`` reads the passages (:func:`xqa.io.read_passages`: JSONL, ``.gz``, DPR TSV),
builds its index with the retriever's own builder and returns the index's summary; each
``describe_*`` is that summary as one line for people. ``xqa index ...`` and the build
recipes (:mod:`xqa.recipes`) call them.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xqa.errors import XqaError

Log = Callable[[str], None]


def _default_threads() -> int:
    """Lucene indexing threads: 2, or 1 on a one-core machine."""
    return min(2, os.cpu_count() or 1)


# ------------------------------------------------------------------ BM25

# The settings of each index: ``xqa index ...`` makes its options from these fields
# (:mod:`xqa.cli_config`; ``metadata["help"]`` is the option's help).
_PROGRESS = field(default=True, metadata={"flag": "--quiet", "help": "no progress bars"})


@dataclass
class SparseIndexConfig:
    passages: str | Path = field(metadata={
        "metavar": "FILE", "help": 'passages: JSONL {"id","title","text","lang"} (or Pyserini\'s '
                                   '{"id","contents","lang"}), or DPR TSV with --lang'})
    out: str | Path = field(metadata={
        "metavar": "DIR", "help": "index folder to create (one Lucene index per language inside)"})
    lang: str | None = field(default=None, metadata={
        "help": "language of passages that carry no 'lang' field (e.g. a DPR TSV file)"})
    threads: int | None = field(default=None, metadata={"min": 1,
        "help": "indexing threads inside Lucene (default: 2, or 1 on a one-core machine)"})
    batch_size: int = field(default=2000, metadata={"min": 1, "help": "passages handed to Lucene per call"})
    overwrite: bool = field(default=False, metadata={
        "help": "rebuild DIR if it already holds a complete index (otherwise refused)"})
    optimize: bool = field(default=True, metadata={
        "help": "skip merging each index into one segment (faster build, slower search)"})
    cross_script: bool = field(default=False, metadata={
        "help": "build ONE index of all languages in romanized tokens (words and consonant skeletons), "
                "which every question searches: finds passages that name the question's people and "
                "places in another script (method sparse+roman)"})
    # None: retriever.sparse.index.STOP_FRACTION
    stop_fraction: float | None = field(default=None, metadata={"min": 0.0, "max": 1.0,
        "metavar": "F",
        "help": "with --cross-script: a question leaves out the tokens found in at least this share of its "
                "own language's passages (its function and template words, which look rare in an index of "
                "every language); 0: keep every token. Tune it on your corpus: the embedded world's is 0.1 "
                "(xqa.world.retrieval) (default: 0)"})
    progress: bool = _PROGRESS


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
    model: str | Path = field(metadata={"help": "bi-encoder folder (xqa train retriever OUT or OUT/best)"})
    passages: str | Path = field(metadata={"help": "passage file (JSONL or DPR TSV)"})
    out: str | Path = field(metadata={"help": "index folder (shards/, index/, config.json)"})
    lang: str | None = field(default=None, metadata={"help": "language of passages that carry none (DPR TSV)"})
    shard_id: int | None = field(default=None, metadata={
        "help": "encode only this shard (0-based); default: all shards in this process"})
    num_shards: int = field(default=1, metadata={"min": 1, "help": "number of shards the passages are split into"})
    chunk_size: int = field(default=20_000, metadata={"min": 1, "help": "passages per resumable chunk inside a shard"})
    index: str = field(default="flat", metadata={
        "choices": ("flat", "hnsw", "ivfpq"),
        "help": "FAISS index type per language: exact inner product, HNSW graph, or IVF-PQ"})
    fp16: bool = field(default=False, metadata={
        "help": "store embeddings (.npy) and the flat index in float16 (half the bytes)"})
    hnsw_m: int = field(default=32, metadata={"min": 1, "help": "HNSW: links per node"})
    ef_construction: int = field(default=200, metadata={"min": 1, "help": "HNSW: candidate list size when building"})
    ef_search: int = field(default=128, metadata={"min": 1, "help": "HNSW: candidate list size when searching"})
    nlist: int = field(default=0, metadata={"help": "IVF-PQ: inverted lists (0: about 4*sqrt(n))"})
    pq_m: int = field(default=0, metadata={"help": "IVF-PQ: sub-quantisers (0: dim/4, a divisor of dim)"})
    pq_bits: int = field(default=8, metadata={"min": 1, "help": "IVF-PQ: bits per sub-quantiser code"})
    nprobe: int = field(default=16, metadata={"min": 1, "help": "IVF-PQ: lists visited per query"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "passages per encoder batch"})
    max_length: int = field(default=0, metadata={
        "help": "passage tokens the encoder reads (0: the model's own setting); recorded in the index"})
    device: str | None = field(default=None, metadata={
        "help": "torch device (default: cuda when available, else cpu)"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    precision: str | None = field(default=None, metadata={
        "choices": ("auto", "fp32", "bf16", "int8"),
        "help": "CPU precision of a converted encoder (default: its own setting, auto: as the "
                "conversion's check on this CPU chose; int8 is its ONNX Runtime file)"})
    encode_only: bool = field(default=False, metadata={
        "help": "encode the shard(s) and stop; a later run without it builds the indexes (so that processes "
                "encoding shards side by side never build them twice)"})
    overwrite: bool = field(default=False, metadata={
        "help": "rebuild the FAISS indexes of a finished folder (finished shards are reused)"})
    progress: bool = _PROGRESS


def build_dense(cfg: DenseIndexConfig, log: Log = print) -> dict[str, Any] | None:
    """Encode the shards still to encode (resumable), then build the FAISS indexes when every
    shard is done; the index's ``config.json``, or None when no index was built (encode only,
    shards left for other processes, or a finished index and no ``overwrite``)."""
    import torch

    from retriever.dense.encode import (KIND, build_indexes, check_shards, encode_shard, model_info, shard_done,
                                        shard_share, weights_fingerprint)
    from retriever.dense.index import IndexParams
    from retriever.dense.model import BiEncoder
    from xqa.artifacts import artifact_kind, file_fingerprint, is_complete, write_json_atomic
    from xqa.io import count_records, read_passages

    out = Path(cfg.out)
    n = cfg.num_shards
    if n < 1:
        raise XqaError("--num-shards must be at least 1")
    if cfg.shard_id is not None and not 0 <= cfg.shard_id < n:
        raise XqaError(f"--shard-id {cfg.shard_id} must be in [0, {n})")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)

    if not Path(cfg.passages).is_file():   # said before --out is written
        raise XqaError(f"{cfg.passages}: " + ("is a folder; --passages is a passage file (JSONL or DPR TSV)"
                                              if Path(cfg.passages).is_dir() else "no such passage file"))
    model_dir = Path(cfg.model)
    if not model_dir.is_dir():
        raise XqaError(f"--model {model_dir}: " + ("is a file; " if model_dir.exists() else "no such folder; ")
                       + "give a bi-encoder folder (xqa train retriever OUT, or xqa convert e5 OUT)")
    held = artifact_kind(out)
    if held not in (None, KIND):
        raise XqaError(f"{out} holds a {held} (its config.json), not a dense index: index into another --out")
    info = model_info(model_dir, out)
    _check_same_model(out, info, cfg.fp16)
    # what each shard records in made_by.json; the precision is known once the model is loaded
    made_by = {"model": weights_fingerprint(model_dir), "passages": file_fingerprint(cfg.passages),
               "lang": cfg.lang or "each passage's", "max_length": cfg.max_length or "the model's"}
    check_shards(out, n, made_by, f"pass the --model, --passages, --lang and --max-length it was encoded "
                                  f"with, or remove {out / 'shards'} to encode them again (or use another --out)")
    if is_complete(out):   # checked first: a refused rerun leaves the finished index as it was
        if not cfg.overwrite:
            log(f"{out} is a finished dense index; nothing to do (--overwrite rebuilds its FAISS indexes)")
            return None
        (out / "config.json").unlink()
    todo = [cfg.shard_id] if cfg.shard_id is not None else list(range(n))
    todo = [s for s in todo if not shard_done(out, s, n)]
    if todo:   # loaded (and its precision resolved) before anything is written: a folder that is no
        # encoder, or a precision it cannot run in, leaves --out as it was
        device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model = BiEncoder.load(model_dir, device=device)
        if cfg.max_length:
            model.config.passage_max_length = cfg.max_length
        if cfg.precision:
            model.config.precision = cfg.precision
        precision = model.cpu_precision() if device == "cpu" else f"{device} bf16"
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "encoding.json", {"model": info, "num_shards": n, "fp16": cfg.fp16,
                                              **({"max_length": cfg.max_length} if cfg.max_length else {})})
    if todo:
        count = None
        if cfg.progress:
            log(f"encoding with {model_dir} in {precision}")
            count = count_records(cfg.passages)   # a pass at disk speed: the bars' totals
        for s in todo:
            # a bar of the shard's passages, and under it one of the chunk being encoded, which moves
            # per batch (a chunk is the unit a rerun resumes from)
            stats = encode_shard(lambda ps: model.encode_passages(ps, batch_size=cfg.batch_size,
                                                                  progress=cfg.progress),
                                 read_passages(cfg.passages, lang=cfg.lang), out, s, n,
                                 fp16=cfg.fp16, chunk_size=cfg.chunk_size, progress=cfg.progress,
                                 total=None if count is None else shard_share(count, s, n),
                                 meta={"precision": precision}, made_by={**made_by, "precision": precision})
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
    from xqa.artifacts import exclusive_if_free

    with exclusive_if_free(out, "build") as mine:   # shards that finish together: one builds (a build
        if not mine:                                 # holds every vector in memory)
            log(f"another process is building the indexes of {out}; this one stops")
            return None
        if is_complete(out):
            log(f"{out}: its indexes were built by another process meanwhile; nothing to do")
            return None
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
    # the same folder, or the same place relative to the index (the two moved together)
    if info["abs_path"] not in (old["model"]["abs_path"], str((out / old["model"]["path"]).resolve())):
        raise XqaError(f"{out} holds shards encoded by {old['model']['abs_path']}, not {info['abs_path']}; "
                       f"use another --out or remove {out}")
    if old.get("fp16") != fp16 and (out / "shards").is_dir():
        raise XqaError(f"{out} holds shards stored with fp16={old.get('fp16')}; pass the same --fp16 "
                       f"or remove {out / 'shards'}")


# ------------------------------------------------------------------ SPAR

@dataclass
class SparIndexConfig:
    dense: str | Path = field(metadata={"help": "finished dense index folder (xqa index dense)"})
    lexical: str | Path = field(metadata={
        "help": "Λ model: a bi-encoder folder or its training run (xqa train lexical)"})
    passages: str | Path = field(metadata={"help": "the passages the dense index holds (JSONL or DPR TSV)"})
    out: str | Path = field(metadata={"help": "output SPAR index folder (rerun to resume)"})
    lang: str | None = field(default=None, metadata={"help": "language of passage files that carry none (DPR TSV)"})
    mode: str = field(default="concat", metadata={
        "choices": ("concat", "sum"),
        "help": "weighted concatenation [P ; PΛ] (paper's choice) or weighted sum P + PΛ (equal dims)"})
    index_type: str | None = field(default=None, metadata={
        "choices": ("flat", "hnsw", "ivfpq"), "help": "FAISS index type (default: the dense index's)"})
    batch_size: int = field(default=64, metadata={"min": 1, "help": "passages per encoding batch"})
    device: str = field(default="cpu", metadata={"help": "torch device for encoding Λ (cpu, cuda)"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    overwrite: bool = field(default=False, metadata={"help": "rebuild a finished index"})
    progress: bool = _PROGRESS


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
    dense: str | Path = field(metadata={"help": "finished dense index folder (xqa index dense)"})
    passages: str | Path = field(metadata={"help": "the passages the dense index holds (JSONL or DPR TSV)"})
    out: str | Path = field(metadata={"help": "output DHR index folder"})
    lang: str | None = field(default=None, metadata={"help": "language of passage files that carry none (DPR TSV)"})
    # None: retriever.dhr.index.DEFAULT_SLICES
    slices: int | None = field(default=None, metadata={"min": 1,
        "help": "M, the number of slices (default 4096: e5's 250,002 pieces give N = 62 dims per slice, so "
                "positions fit one byte; 3 bytes per slice, ~12 KB per passage). A piece that shares its slice "
                "with a heavier piece of the same passage is lost: on the shipped corpus 19% of passage pieces "
                "contiguous, 1.8% strided"})
    strided: bool = field(default=False, metadata={
        "help": "slice m = dims {m, m+M, m+2M, ...} instead of the contiguous [mN, (m+1)N)"})
    # None: retriever.dhr.index.DEFAULT_LAMBDA
    lam: float | None = field(default=None, metadata={"min": 0.0,
        "flag": "--lambda", "aliases": ("--lam",), "help": "λ recorded as the index's default dense weight: score = GIP + λ·dense (GIP is on the BM25 "
                "scale, ~10-40, e5 cosines ~0.8; 500 is the best R@5 on the shipped corpus's tune questions; "
                "xqa tune lambda tunes it for another corpus)"})
    batch_size: int = field(default=1024, metadata={"min": 1, "help": "passages per tokenizer call"})
    overwrite: bool = field(default=False, metadata={"help": "rebuild an existing index"})
    progress: bool = _PROGRESS


def build_dhr(cfg: DhrIndexConfig) -> dict[str, Any]:
    """The DHR index (:func:`retriever.dhr.index.build_dhr_index`); its config with ``seconds``."""
    from retriever.dhr.index import DEFAULT_LAMBDA, DEFAULT_SLICES, build_dhr_index
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
    passages: str | Path = field(metadata={
        "metavar": "FILE", "help": 'passages: JSONL {"id","title","text","lang"} (or DPR TSV with --lang)'})
    encoder: str | Path = field(metadata={
        "metavar": "DIR",
        "help": "encoder folder whose tokenizer makes the pieces (e.g. the converted multilingual-e5-small)"})
    out: str | Path = field(metadata={"metavar": "DIR", "help": "index folder to create"})
    lang: str | None = field(default=None, metadata={"help": "language of passages that carry no 'lang' field"})
    threads: int | None = field(default=None, metadata={"min": 1,
        "help": "indexing threads inside Lucene (default: 2, or 1 on a one-core machine)"})
    batch_size: int = field(default=1000, metadata={"min": 1, "help": "passages handed to Lucene per call"})
    overwrite: bool = field(default=False, metadata={"help": "rebuild DIR if it holds a finished index"})
    progress: bool = _PROGRESS


def build_pieces(cfg: PiecesIndexConfig) -> dict[str, Any]:
    """The pieces index (:func:`retriever.bm25_aug.pieces.build_pieces_index`); its config with ``seconds``."""
    from retriever.bm25_aug.pieces import build_pieces_index
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
