"""Per-language FAISS indexes of passage vectors, searched as one global index.

The MIA system keeps one dense index per language and retrieves the global
top-K over all of them (Tu & Padmanabhan 2022, §3.2): each language's top-K is found
separately and the lists are merged by score. Scores are inner products, so
the merge is exact for exact (flat) indexes.

Index types (``kind``):

- ``flat``: exact inner product (``IndexFlatIP``; ``IndexScalarQuantizer``
  fp16 when ``fp16`` — half the memory, same ranking up to fp16 rounding);
- ``hnsw``: graph search (``IndexHNSWFlat``, ``M`` links, ``efSearch`` at query time);
- ``ivfpq``: inverted lists + product quantisation (``IndexIVFPQ``), the
  smallest; ``nprobe`` lists visited at query time.

On disk (one folder)::

    config.json            kind "dense_langs": index type, params, dim, languages
    {lang}/index.faiss     FAISS's own binary format (no pickle)
    {lang}/ids.txt         passage id of each row, one a line
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from xqa.artifacts import atomic_dir, load_config, save_config
from xqa.errors import XqaError
from xqa.records import Hit

KIND = "dense_langs"
INDEX_TYPES = ("flat", "hnsw", "ivfpq")


@dataclass
class IndexParams:
    """Build and search parameters; defaults suit 1e3–1e7 vectors per language."""

    kind: str = "flat"
    fp16: bool = False        # flat only: store fp16 vectors
    hnsw_m: int = 32          # HNSW links per node
    ef_construction: int = 200
    ef_search: int = 128
    nlist: int = 0            # IVF lists; 0 → about 4·sqrt(n), at least 39 points per list
    pq_m: int = 0             # PQ sub-quantisers; 0 → d/4 rounded down to a divisor of d
    pq_bits: int = 8          # bits per PQ code (lowered automatically for tiny sets)
    nprobe: int = 16


def _faiss():
    try:
        import faiss
    except ImportError as e:
        raise XqaError("FAISS is not installed: pip install 'xqa[cpu]' (or 'xqa[gpu]' on a CUDA machine)") from e
    return faiss


def build_index(vectors: np.ndarray, params: IndexParams):
    """A trained and filled FAISS index of ``vectors`` ``[n, d]`` (inner-product metric)."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    index = new_index(x, params)
    index.add(x)
    return index


def new_index(vectors: np.ndarray, params: IndexParams):
    """An empty FAISS index of ``params.kind``, trained on ``vectors`` ``[n, d]`` where it needs training."""
    faiss = _faiss()
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    ip = faiss.METRIC_INNER_PRODUCT
    if params.kind == "flat":
        index = (faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_fp16, ip)
                 if params.fp16 else faiss.IndexFlatIP(d))
    elif params.kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, params.hnsw_m, ip)
        index.hnsw.efConstruction = params.ef_construction
        index.hnsw.efSearch = params.ef_search
    elif params.kind == "ivfpq":
        nlist = params.nlist or max(1, min(int(4 * math.sqrt(n)), n // 39))
        if nlist > n:   # k-means of nlist centroids needs at least as many vectors
            raise XqaError(f"--nlist {nlist} lists need at least {nlist} vectors to train on, and an index of "
                           f"this collection has {n}: give a smaller --nlist (or none: about 4·√n)")
        m = params.pq_m or _divisor_at_most(d, max(1, d // 4))
        if d % m:
            raise XqaError(f"--pq-m {m} must divide the vector size {d}")
        bits = min(params.pq_bits, max(1, int(math.log2(max(n, 2)))))  # PQ needs >= 2^bits points
        index = faiss.index_factory(d, f"IVF{nlist},PQ{m}x{bits}", ip)  # owns its coarse quantizer
        # Polysemous training (on by default) only serves Hamming-filtered search, which we do
        # not use, and costs ~100x the rest of training.
        index.do_polysemous_training = False
        _quiet_kmeans(index)
        index.train(x)
        index.nprobe = min(params.nprobe, nlist)
    else:
        raise XqaError(f"unknown index type {params.kind!r}; choose from {', '.join(INDEX_TYPES)}")
    if not index.is_trained:
        index.train(x)
    return index


def _quiet_kmeans(index) -> None:
    """Silence FAISS's "please provide at least 256*39 training points" for PQ codebooks:
    with fewer points we already lowered the bits; a few points per centroid is fine there."""
    _faiss().downcast_index(index).pq.cp.min_points_per_centroid = 1


def _divisor_at_most(d: int, m: int) -> int:
    while d % m:
        m -= 1
    return m


@dataclass
class LanguageIndexes:
    """One FAISS index and id list per language, searched globally."""

    params: IndexParams
    dim: int
    indexes: dict[str, object] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, groups: Mapping[str, tuple[np.ndarray, list[str]]], params: IndexParams,
              progress: bool = False) -> "LanguageIndexes":
        """Build from ``{lang: (vectors [n, d], ids [n])}``."""
        dims = {v.shape[1] for v, _ in groups.values()}
        if len(dims) > 1:
            raise XqaError(f"vectors of different sizes across languages: {sorted(dims)}")
        out = cls(params, dims.pop() if dims else 0)
        items: Iterable = sorted(groups.items())
        if progress:
            from tqdm import tqdm

            items = tqdm(items, desc=f"building {params.kind} indexes", unit="lang")
        for lang, (vecs, ids) in items:
            if len(ids) != len(vecs):
                raise XqaError(f"language {lang}: {len(vecs)} vectors but {len(ids)} ids")
            if len(ids) == 0:
                continue
            out.indexes[lang] = build_index(vecs, params)
            out.ids[lang] = list(ids)
        return out

    # -------------------------------------------------------------- disk
    def save(self, folder: str | Path, overwrite: bool = True) -> Path:
        faiss = _faiss()
        with atomic_dir(folder, overwrite=overwrite) as tmp:
            for lang, index in self.indexes.items():
                (tmp / lang).mkdir()
                faiss.write_index(_to_cpu(index), str(tmp / lang / "index.faiss"))
                (tmp / lang / "ids.txt").write_text("\n".join(self.ids[lang]) + "\n", encoding="utf-8")
            save_config(tmp, KIND, {"params": vars(self.params), "dim": self.dim,
                                    "languages": {k: len(v) for k, v in self.ids.items()}})
        return Path(folder)

    @classmethod
    def load(cls, folder: str | Path, languages: Iterable[str] | None = None,
             use_gpu: bool | None = None) -> "LanguageIndexes":
        """Load (optionally only some ``languages``); flat/IVF indexes go to the GPUs when present."""
        faiss = _faiss()
        folder = Path(folder)
        try:
            cfg = load_config(folder, KIND)
        except ValueError as e:
            raise XqaError(str(e)) from None
        params = IndexParams(**cfg["params"])
        out = cls(params, int(cfg["dim"]))
        wanted = set(languages) if languages is not None else None
        if use_gpu is None:
            use_gpu = getattr(faiss, "get_num_gpus", lambda: 0)() > 0
        for lang in sorted(cfg["languages"]):
            if wanted is not None and lang not in wanted:
                continue
            index = faiss.read_index(str(folder / lang / "index.faiss"))
            if params.kind == "hnsw":
                index.hnsw.efSearch = params.ef_search
            elif params.kind == "ivfpq":
                index.nprobe = params.nprobe
            if use_gpu and params.kind != "hnsw":
                index = faiss.index_cpu_to_all_gpus(index)
            out.indexes[lang] = index
            out.ids[lang] = (folder / lang / "ids.txt").read_text(encoding="utf-8").splitlines()
        return out

    # ------------------------------------------------------------ search
    @property
    def languages(self) -> list[str]:
        return sorted(self.indexes)

    def __len__(self) -> int:
        return sum(len(v) for v in self.ids.values())

    def set_search_params(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        for index in self.indexes.values():
            if ef_search is not None and hasattr(index, "hnsw"):
                index.hnsw.efSearch = ef_search
            if nprobe is not None and hasattr(index, "nprobe"):
                index.nprobe = nprobe

    def search(self, q: np.ndarray, k: int, source: str = "dense") -> list[list[Hit]]:
        """Global top-``k`` for each row of ``q`` ``[n, d]``: each language's top-k, merged by score."""
        q = np.ascontiguousarray(q, dtype=np.float32)
        if q.ndim != 2 or (len(self.indexes) and q.shape[1] != self.dim):
            raise XqaError(f"query vectors of shape {q.shape} do not match index size {self.dim}")
        n = q.shape[0]
        if n == 0 or k <= 0 or not self.indexes:
            return [[] for _ in range(n)]
        langs = self.languages
        all_scores, all_rows, all_lang = [], [], []
        for li, lang in enumerate(langs):
            kk = min(k, len(self.ids[lang]))
            s, r = self.indexes[lang].search(q, kk)  # [n, kk] each
            all_scores.append(s)
            all_rows.append(r)
            all_lang.append(np.full(r.shape, li, dtype=np.int32))
        scores = np.concatenate(all_scores, axis=1)  # [n, sum kk]
        rows = np.concatenate(all_rows, axis=1)
        lang_of = np.concatenate(all_lang, axis=1)
        scores = np.where(rows < 0, -np.inf, scores)  # faiss pads short lists with -1
        order = np.argsort(-scores, axis=1, kind="stable")
        out: list[list[Hit]] = []
        for i in range(n):
            hits, seen = [], set()
            for j in order[i]:
                if len(hits) == k or not np.isfinite(scores[i, j]):
                    break
                lang = langs[lang_of[i, j]]
                pid = self.ids[lang][rows[i, j]]
                if pid in seen:
                    continue
                seen.add(pid)
                hits.append(Hit(pid, float(scores[i, j]), source, lang))
            out.append(hits)
        return out


def _to_cpu(index):
    faiss = _faiss()
    if hasattr(faiss, "index_gpu_to_cpu") and type(index).__name__.startswith("Gpu"):
        return faiss.index_gpu_to_cpu(index)
    return index


def index_bytes(index) -> int:
    """Serialized size of a FAISS index in bytes."""
    faiss = _faiss()
    return int(faiss.serialize_index(_to_cpu(index)).size)
