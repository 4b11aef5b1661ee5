"""Sharded, resumable passage encoding and the final per-language index build.

A dense index folder ``OUT`` is filled in two steps:

1. ``encode_shard``: shard ``i`` of ``n`` holds the passages whose position in
   the passage stream is ``≡ i (mod n)``. Shards can run as separate processes
   or machines (anything that sees ``OUT``). A shard is written in chunks;
   each chunk is two files, ``ids`` text (passage id and language per line)
   then the ``.npy`` vectors, each written to a temporary name and renamed,
   so a killed run resumes at the first missing chunk and never recomputes a
   finished one. ``done.json`` marks a complete shard.
2. ``build_indexes``: once every shard is done, group vectors by language and
   build the FAISS indexes (``OUT/index/``, atomic), then write
   ``OUT/config.json`` (kind ``dense_index``) — only a folder with that file
   is a finished index.

Layout::

    OUT/config.json                         model, dim, shards, index params
    OUT/shards/00000-of-00004/chunk-000000.ids   "id<TAB>lang" per line
    OUT/shards/00000-of-00004/chunk-000000.npy   [m, d] float32 or float16
    OUT/shards/00000-of-00004/done.json
    OUT/shards/00000-of-00004/made_by.json  what encodes it (encoder, settings, passages)
    OUT/index/                              LanguageIndexes folder

``made_by.json`` is written before the first chunk: a run that resumes a shard, or reuses a
finished one, with another encoder, other settings or other passages is refused (or, for a
folder of intermediate vectors, re-encodes it: ``stale="redo"``) instead of mixing vectors.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from xqa.artifacts import (exclusive, file_fingerprint, is_complete, save_config, write_file_atomic,
                           write_json_atomic, write_text_atomic)
from xqa.errors import XqaError
from xqa.records import Passage

from .index import IndexParams, LanguageIndexes

KIND = "dense_index"
DEFAULT_CHUNK = 20_000


def shard_dir(out_dir: str | Path, shard_id: int, num_shards: int) -> Path:
    return Path(out_dir) / "shards" / f"{shard_id:05d}-of-{num_shards:05d}"


def shard_done(out_dir: str | Path, shard_id: int, num_shards: int) -> bool:
    return (shard_dir(out_dir, shard_id, num_shards) / "done.json").is_file()


MADE_BY = "made_by.json"


def weights_fingerprint(model_dir: str | Path) -> str:
    """An encoder folder's weights (every ``*.safetensors`` in it; a training run's ``best``):
    the same for a copy of the folder elsewhere, different for other weights (see
    :func:`file_fingerprint`)."""
    folder = Path(model_dir)
    if (folder / "best" / "config.json").is_file() and not (folder / "query_encoder").is_dir():
        folder = folder / "best"
    files = sorted(folder.rglob("*.safetensors"))
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.relative_to(folder).as_posix()}\t{file_fingerprint(f)}\n".encode())
    return f"{len(files)} weight file(s), sha256 {digest.hexdigest()[:16]}"


def passages_fingerprint(passages: Sequence[Passage]) -> str:
    """Passages in memory: their number and a digest of every id, language and text."""
    digest = hashlib.sha256()
    for p in passages:
        digest.update(f"{p.id}\t{p.lang}\t{p.title}\t{p.text}\n".encode("utf-8", "surrogatepass"))
    return f"{len(passages)} passages, sha256 {digest.hexdigest()[:16]}"


def made_by_differences(folder: str | Path, made_by: dict) -> list[str]:
    """How ``made_by`` differs from what encoded ``folder`` (its ``made_by.json``), one line per
    setting that both name; none where the folder records nothing or holds no vectors yet (a run
    stopped before its first chunk, by a bad passage record say). The chunk size matters only to
    a shard still being encoded (where its chunks resume)."""
    path = Path(folder) / MADE_BY
    done = (Path(folder) / "done.json").is_file()
    if not path.is_file() or not (done or any(Path(folder).glob("chunk-*.npy"))):
        return []
    old = json.loads(path.read_text(encoding="utf-8"))
    return [f"{key} {old[key]} there, {value} now" for key, value in made_by.items()
            if key in old and old[key] != value and not (done and key == "chunk_size")]


def check_shards(out_dir: str | Path, num_shards: int, made_by: dict, remedy: str) -> None:
    """Refuse, before anything is loaded or written, where a shard of ``out_dir`` begun or finished
    holds vectors another encoder, other settings or other passages made (the settings ``made_by``
    names: :func:`made_by_differences`); ``remedy`` says what to do instead."""
    for s in range(num_shards):
        folder = shard_dir(out_dir, s, num_shards)
        differ = made_by_differences(folder, made_by)
        if differ:
            raise XqaError(f"{folder} holds vectors encoded otherwise ({'; '.join(differ)}); {remedy}")


def _chunks(passages: Iterable[Passage], shard_id: int, num_shards: int,
            chunk_size: int) -> Iterator[list[Passage]]:
    buf: list[Passage] = []
    for i, p in enumerate(passages):
        if i % num_shards != shard_id:
            continue
        buf.append(p)
        if len(buf) == chunk_size:
            yield buf
            buf = []
    if buf:
        yield buf


def shard_share(count: int, shard_id: int, num_shards: int) -> int:
    """How many of ``count`` passages shard ``shard_id`` of ``num_shards`` holds (every
    ``num_shards``-th from the ``shard_id``-th, as :func:`encode_shard` takes them)."""
    return max(0, (count - shard_id + num_shards - 1) // num_shards)


def _save_npy_atomic(path: Path, arr: np.ndarray) -> None:
    write_file_atomic(path, lambda f: np.save(f, arr))


def encode_shard(encode: Callable[[Sequence[Passage]], np.ndarray], passages: Iterable[Passage],
                 out_dir: str | Path, shard_id: int = 0, num_shards: int = 1, *,
                 fp16: bool = False, chunk_size: int = DEFAULT_CHUNK, progress: bool = True,
                 meta: dict | None = None, made_by: dict | None = None, stale: str = "refuse",
                 log: Callable[[str], object] = print, total: int | None = None) -> dict:
    """Encode shard ``shard_id`` of ``num_shards`` into ``out_dir/shards``; resume if interrupted.

    ``encode`` maps passages to vectors ``[m, d]`` float32 (e.g.
    ``BiEncoder.encode_passages``); ``meta`` (e.g. the precision that encoded it) goes into the
    shard's ``done.json``; ``made_by`` (JSON values: the encoder, its settings, the passages'
    fingerprint) into its ``made_by.json``. A shard begun or finished by another ``made_by``
    (:func:`made_by_differences`) is refused (``stale="refuse"``) or encoded afresh
    (``"redo"``, for intermediate vectors nobody else reads). ``progress``: a bar of the shard's
    passages, done chunks counted at once; ``total``, the shard's passage count where the caller
    knows it (:func:`shard_share`). Returns counts ``{"encoded", "skipped", "chunks"}``.
    """
    if not 0 <= shard_id < num_shards:
        raise XqaError(f"--shard-id {shard_id} must be in [0, {num_shards})")
    folder = shard_dir(out_dir, shard_id, num_shards)
    stats = {"encoded": 0, "skipped": 0, "chunks": 0}
    made_by = dict(made_by or {}, fp16=fp16, chunk_size=chunk_size)
    differ = made_by_differences(folder, made_by)
    if differ and stale == "redo":
        log(f"{folder} holds vectors encoded otherwise ({'; '.join(differ)}): encoding them again")
        shutil.rmtree(folder)
    elif differ:
        raise XqaError(f"{folder} holds vectors encoded otherwise ({'; '.join(differ)}); pass the same, "
                       f"or remove {folder} to encode it again (or use another output folder)")
    if (folder / "done.json").is_file():
        stats["skipped"] = json.loads((folder / "done.json").read_text())["passages"]
        return stats
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive(out_dir, f"shard {shard_id} of {out_dir} is being encoded by another process",
                   part=folder.name):
        if not (folder / MADE_BY).is_file() or not any(folder.glob("chunk-*.npy")):   # (again) before the first chunk
            write_json_atomic(folder / MADE_BY, made_by)
        return _encode_into(encode, passages, folder, shard_id, num_shards, fp16, chunk_size, progress, meta, stats,
                            total)


def _encode_into(encode: Callable[[Sequence[Passage]], np.ndarray], passages: Iterable[Passage], folder: Path,
                 shard_id: int, num_shards: int, fp16: bool, chunk_size: int, progress: bool, meta: dict | None,
                 stats: dict, total_passages: int | None = None) -> dict:
    """:func:`encode_shard` into the shard's ``folder``, which this process alone writes."""
    for stale in folder.glob(".chunk-*.tmp"):  # a chunk being written when a run of this shard was killed
        stale.unlink(missing_ok=True)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total_passages, desc=f"shard {shard_id}/{num_shards}", unit="passage")
    total, dim = 0, None
    try:
        for c, chunk in enumerate(_chunks(passages, shard_id, num_shards, chunk_size)):
            npy = folder / f"chunk-{c:06d}.npy"
            ids = folder / f"chunk-{c:06d}.ids"
            total += len(chunk)
            stats["chunks"] += 1
            id_text = "".join(f"{p.id}\t{p.lang}\n" for p in chunk)
            if npy.is_file() and ids.is_file():
                if ids.read_text(encoding="utf-8") != id_text:
                    raise XqaError(f"{ids}: the passages differ from the run that wrote this chunk; "
                                   f"remove {folder} to re-encode")
                stats["skipped"] += len(chunk)
            else:
                write_text_atomic(ids, id_text)
                vec = np.asarray(encode(chunk), dtype=np.float32)
                if vec.shape[0] != len(chunk):
                    raise XqaError(f"encoder returned {vec.shape[0]} vectors for {len(chunk)} passages")
                _save_npy_atomic(npy, vec.astype(np.float16) if fp16 else vec)
                stats["encoded"] += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    write_json_atomic(folder / "done.json", {**(meta or {}), "passages": total, "chunks": stats["chunks"],
                                             "fp16": fp16})
    return stats


def read_shards(out_dir: str | Path, num_shards: int) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
    """Yield ``(vectors [m, d] float32, ids, langs)`` per chunk of every (finished) shard."""
    for s in range(num_shards):
        folder = shard_dir(out_dir, s, num_shards)
        if not (folder / "done.json").is_file():
            raise XqaError(f"{folder}: shard not finished; run `xqa index dense --shard-id {s} "
                           f"--num-shards {num_shards}`")
        n_chunks = json.loads((folder / "done.json").read_text())["chunks"]
        for c in range(n_chunks):
            ids_path = folder / f"chunk-{c:06d}.ids"
            rows = [line.split("\t") for line in ids_path.read_text(encoding="utf-8").splitlines()]
            for ln, r in enumerate(rows, 1):
                if len(r) != 2:
                    raise XqaError(f"{ids_path}:{ln}: expected 'id<TAB>lang'")
            vec = np.load(folder / f"chunk-{c:06d}.npy", allow_pickle=False).astype(np.float32)
            yield vec, [r[0] for r in rows], [r[1] for r in rows]


def build_indexes(out_dir: str | Path, num_shards: int, params: IndexParams,
                  model_info: dict, progress: bool = True) -> Path:
    """Group every shard's vectors by language, build the FAISS indexes, finish ``out_dir``."""
    out_dir = Path(out_dir)
    by_lang: dict[str, tuple[list[np.ndarray], list[str]]] = {}
    seen: set[str] = set()
    for vec, ids, langs in read_shards(out_dir, num_shards):
        langs_arr = np.asarray(langs)
        for lang in dict.fromkeys(langs):
            sel = np.nonzero(langs_arr == lang)[0]
            vs, is_ = by_lang.setdefault(lang, ([], []))
            vs.append(vec[sel])
            is_.extend(ids[i] for i in sel)
        for pid in ids:
            if pid in seen:
                raise XqaError(f"passage id {pid!r} occurs twice in the passages")
            seen.add(pid)
    groups = {lang: (np.concatenate(vs), is_) for lang, (vs, is_) in by_lang.items()}
    precisions = sorted({json.loads((shard_dir(out_dir, s, num_shards) / "done.json").read_text()).get("precision", "")
                         for s in range(num_shards)} - {""})
    indexes = LanguageIndexes.build(groups, params, progress=progress)
    indexes.save(out_dir / "index")
    save_config(out_dir, KIND, {
        "model": model_info, "dim": indexes.dim, "num_shards": num_shards,
        "index": vars(params), "passages": len(seen), **({"precisions": precisions} if precisions else {}),
        "languages": {k: len(v) for k, v in indexes.ids.items()},
    })
    return out_dir


def index_config(out_dir: str | Path) -> dict:
    """The finished index folder's ``config.json``."""
    from xqa.artifacts import load_finished

    return load_finished(out_dir, KIND, "dense index (run `xqa index dense`)")


def model_info(model_dir: str | Path, index_dir: str | Path) -> dict:
    """How the index records its encoder: relative path (relocatable) and absolute path."""
    model_dir, index_dir = Path(model_dir).resolve(), Path(index_dir).resolve()
    return {"path": os.path.relpath(model_dir, index_dir), "abs_path": str(model_dir)}


def resolve_model_dir(index_dir: str | Path, info: dict) -> Path:
    rel = (Path(index_dir) / info["path"]).resolve()
    for cand in (rel, Path(info["abs_path"])):
        if is_complete(cand):
            return cand
    raise XqaError(f"{index_dir}: its encoder {info['path']} ({info['abs_path']}) is gone; "
                   f"pass model_dir / --model explicitly")
