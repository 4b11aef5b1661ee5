"""The DHR index and retriever: densified BM25 over e5 pieces plus the e5 vectors, one folder.

DHR (dense hybrid representation, Lin & Lin, "A Dense Representation
Framework for Lexical and Semantic Matching", TOIS 2023) without training:
each passage is ``[DLR(d) ; e_d]``, the densified BM25 vector over the dense
encoder's tokenizer pieces (:mod:`retriever.dhr.densify`) next to its dense
vector from the existing dense index, and a query scores

    score(q, d) = GIP(q, d) + λ·⟨e_q, e_d⟩

in one exact pass over one index, globally over every language (as the dense
retriever searches). λ lives on the query side: ``with_lambda`` never touches
the index; ``lexical()`` is GIP alone (DLR, source ``dlr``; it never loads the
query encoder) and ``dense_part()`` the dense scores alone.

Search: for a batch of queries, each query's few non-zero slices are gathered
over all passages (slice-major arrays, so one slice is one contiguous row) and
gated against the query's positions; the dense part is one matmul. Passages are
scored in row chunks and a running top-k is kept, so memory stays at
``batch × chunk`` scores.

Scaling: per passage the index holds ``M·(2 + 1)`` bytes (float16 value,
uint8 position for ``N <= 256``; ``M·(2 + 2)`` with uint16) plus ``2·384``
bytes of float16 dense vector: with M = 4096, about 13 KB, so 1M passages
take ~13 GB. On a GPU the same gather + gate + matmul runs in torch on CUDA
(``index_select`` of the query batch's slices, ``==`` against the positions,
one ``[B, 384] × [384, n]`` matmul, ``topk``); beyond one device's memory the
passage rows are sharded across devices or machines, each returns its top-k
and the lists merge by score (exact, as the per-language dense indexes merge).

Layout (``OUT``)::

    config.json     kind "dhr_index": M, N, strided, |V|, k1, b, λ, dense index, encoder, counts, bytes
    lex_val.npy     [M, n] float16 slice maxima (slice-major)
    lex_idx.npy     [M, n] uint8 / uint16 positions of the maxima in their slices
    dense.npy       [n, d] float16 dense passage vectors (row order of ids.txt)
    idf.npy         [|V|] float32 BM25 IDF of each piece over the pool
    df.npy          [|V|] int64 document frequency of each piece over the pool
    ids.txt         passage id per row
    langs.txt       passage language per row
"""
from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from retriever.base import check_k
from xqa.artifacts import (atomic_dir, check_replaceable, folder_ref, holds_kind, load_config, load_finished,
                           resolve_ref, save_config)
from xqa.errors import XqaError
from xqa.records import Hit, Passage, Question

from .densify import (
    B,
    K1,
    bm25_idf,
    bm25_weights,
    densify,
    densify_queries,
    document_frequencies,
    idx_dtype,
    slice_shape,
    term_counts,
)

KIND = "dhr_index"
DEFAULT_SLICES = 4096
DEFAULT_LAMBDA = 500.0  # best R@5 on the shipped corpus's tune questions (docs/fusion.md)
FILES = ("lex_val.npy", "lex_idx.npy", "dense.npy", "idf.npy", "df.npy", "ids.txt", "langs.txt")


def tokenizer_folder(model_dir: str | Path) -> Path:
    """Where an encoder folder keeps its tokenizer: ``tokenizer/`` of an xqa bi-encoder (or of
    its training run's ``best/``), else the folder itself (a converted e5 / Hugging Face folder)."""
    d = Path(model_dir)
    if (d / "best" / "config.json").is_file() and not (d / "query_encoder").is_dir():
        d = d / "best"
    return d / "tokenizer" if (d / "tokenizer").is_dir() else d


def load_tokenizer(model_dir: str | Path):
    """The encoder's tokenizer (``AutoTokenizer``) and its vocabulary size ``|V|``."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_folder(model_dir)))
    return tok, max(len(tok), int(tok.vocab_size or 0))


def passage_text(p: Passage) -> str:
    """``title text``: the passage as the e5 encoder reads it, without its ``passage:`` prefix."""
    return f"{p.title} {p.text}" if p.title else (p.text or "")


def pieces(tokenizer, texts: Sequence[str], batch_size: int = 1024) -> list[list[int]]:
    """Piece ids of each text (no special tokens, no truncation: BM25 sees the whole text)."""
    out: list[list[int]] = []
    for s in range(0, len(texts), batch_size):
        out.extend(tokenizer(list(texts[s: s + batch_size]), add_special_tokens=False,
                             verbose=False)["input_ids"])
    return out


def _dense_rows(dense_dir: Path, dcfg: dict) -> tuple[np.ndarray, list[str], list[str]]:
    """``(vectors [n, d] float32, ids, langs)`` of the dense index: its kept shards, else the
    flat FAISS indexes' own vectors (reconstructed)."""
    from retriever.dense.encode import read_shards, shard_done

    n = int(dcfg.get("num_shards", 1))
    if all(shard_done(dense_dir, s, n) for s in range(n)):
        vecs, ids, langs = [], [], []
        for v, i, la in read_shards(dense_dir, n):
            vecs.append(v)
            ids.extend(i)
            langs.extend(la)
        d = int(dcfg["dim"])
        return (np.concatenate(vecs) if vecs else np.zeros((0, d), np.float32)), ids, langs
    from retriever.dense.index import LanguageIndexes

    idx = LanguageIndexes.load(dense_dir / "index", use_gpu=False)
    if idx.params.kind != "flat":
        raise XqaError(f"{dense_dir}: its encoded shards are gone and a {idx.params.kind} index cannot give "
                       f"back its vectors exactly; rebuild the dense index (xqa index dense) and keep its shards")
    vecs, ids, langs = [], [], []
    for lang in idx.languages:
        index = idx.indexes[lang]
        vecs.append(index.reconstruct_n(0, index.ntotal))
        ids.extend(idx.ids[lang])
        langs.extend([lang] * index.ntotal)
    return (np.concatenate(vecs) if vecs else np.zeros((0, idx.dim), np.float32)), ids, langs


def build_dhr_index(dense_index_dir: str | Path, passages: Iterable[Passage], out_dir: str | Path, *,
                    slices: int = DEFAULT_SLICES, strided: bool = False, lam: float = DEFAULT_LAMBDA,
                    k1: float = K1, b: float = B, batch_size: int = 1024, overwrite: bool = False,
                    progress: bool = True) -> dict:
    """Build the DHR index of the dense index's passages in ``out_dir`` (atomic); returns its config.

    ``dense_index_dir``: a finished ``xqa index dense`` folder (its vectors are
    read, not re-encoded; its encoder's tokenizer gives the pieces);
    ``passages``: the passages it holds (extra ones are ignored, missing ones
    are an error). BM25 statistics (df, avgdl) are over the indexed pool.
    ``lam`` is recorded as the default λ. ``batch_size``: texts per tokenizer call.
    """
    from retriever.dense.encode import index_config, resolve_model_dir

    t0 = time.perf_counter()
    out, dense_dir = Path(out_dir), Path(dense_index_dir)
    if holds_kind(out, KIND) and not overwrite:
        raise XqaError(f"{out} is a finished DHR index; pass --overwrite (overwrite=True) to rebuild it")
    check_replaceable(out, "the DHR index", overwrite, "choose another --out")
    if not (lam >= 0 and np.isfinite(lam)):
        raise XqaError(f"λ must be finite and >= 0 (got {lam})")
    dcfg = index_config(dense_dir)
    model_dir = resolve_model_dir(dense_dir, dcfg["model"])
    tok, vocab = load_tokenizer(model_dir)
    m, n = slice_shape(vocab, slices)
    vecs, ids, langs = _dense_rows(dense_dir, dcfg)
    if len(set(ids)) != len(ids):
        raise XqaError(f"{dense_dir}: a passage id occurs twice in the dense index")
    by_id = {p.id: p for p in passages}
    missing = [p for p in ids if p not in by_id]
    if missing:
        raise XqaError(f"passage {missing[0]!r} of the dense index is not in the passages given "
                       f"({len(missing)} missing): pass the passages the dense index holds")
    texts = [passage_text(by_id[p]) for p in ids]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(texts), desc="tokenizing passages", unit="passage")
    toks: list[list[int]] = []
    for s in range(0, len(texts), batch_size):
        toks.extend(pieces(tok, texts[s: s + batch_size], batch_size))
        if bar is not None:
            bar.update(min(batch_size, len(texts) - s))
    if bar is not None:
        bar.close()
    counts, lengths = term_counts(toks, vocab)
    df = document_frequencies(counts, vocab)
    idf = bm25_idf(df, len(ids))
    avgdl = float(lengths.mean()) if len(ids) else 1.0
    val, idx = densify(bm25_weights(counts, lengths, idf, k1, b, avgdl), vocab, m, strided=strided)
    collided = int(counts.indices.size - np.count_nonzero(val))
    with atomic_dir(out, overwrite=True) as tmp:
        np.save(tmp / "lex_val.npy", np.ascontiguousarray(val.T), allow_pickle=False)
        np.save(tmp / "lex_idx.npy", np.ascontiguousarray(idx.T), allow_pickle=False)
        np.save(tmp / "dense.npy", vecs.astype(np.float16), allow_pickle=False)
        np.save(tmp / "idf.npy", idf, allow_pickle=False)
        np.save(tmp / "df.npy", df, allow_pickle=False)
        (tmp / "ids.txt").write_text("".join(f"{p}\n" for p in ids), encoding="utf-8")
        (tmp / "langs.txt").write_text("".join(f"{la}\n" for la in langs), encoding="utf-8")
        nbytes = sum((tmp / f).stat().st_size for f in FILES)
        lang_counts: dict[str, int] = {}
        for la in langs:
            lang_counts[la] = lang_counts.get(la, 0) + 1
        config = {
            "slices": m, "slice_dims": n, "strided": bool(strided), "vocab_size": vocab,
            "idx_dtype": idx_dtype(n).name, "k1": k1, "b": b, "avgdl": avgdl, "lam": float(lam),
            "dense_dim": int(vecs.shape[1]), "dense_index": folder_ref(dense_dir, out), "model": folder_ref(model_dir, out),
            "passages": len(ids), "languages": dict(sorted(lang_counts.items())),
            "pieces": int(counts.indices.size), "collided_pieces": collided,
            "bytes": nbytes, "seconds": round(time.perf_counter() - t0, 2),
        }
        # the config records the final folder's relative paths, written from the temporary sibling
        save_config(tmp, KIND, config)
    return load_config(out, KIND)


class QueryBatch:
    """Queries ready to score: densified pieces (``val``, ``idx`` ``[n, M]``) and dense vectors
    ``[n, d]`` (None when only GIP is needed)."""

    def __init__(self, val: np.ndarray, idx: np.ndarray, dense: np.ndarray | None):
        self.val, self.idx, self.dense = val, idx, dense

    def __len__(self) -> int:
        return self.val.shape[0]


# The CPU search keeps a float32 copy of the dense vectors up to this size (bytes of the copy).
DENSE_FP32_CACHE_BYTES = 1 << 30

class DhrRetriever:
    """Exact DHR search ``w·GIP + λ·dense`` over one ``xqa index dhr`` folder (``w`` = 1).

    Views (``with_lambda``, ``lexical``, ``dense_part``) share the arrays, the
    tokenizer and the query encoder (loaded on the first search that needs it).
    """

    def __init__(self, folder: Path | None, config: dict, arrays: dict[str, object], lam: float,
                 lex_weight: float = 1.0, source: str = "dhr", batch_size: int = 64,
                 chunk: int = 262_144, device: str | None = None):
        self.folder, self.config, self._arrays = folder, config, arrays
        self.lam, self.lex_weight, self.source = float(lam), float(lex_weight), source
        self.batch_size, self.chunk = batch_size, chunk
        self.device = device

    @classmethod
    def load(cls, folder: str | Path, lam: float | None = None, *, batch_size: int = 64,
             mmap: bool = False, device: str | None = None) -> DhrRetriever:
        """Load ``xqa index dhr``'s folder; ``lam`` overrides the recorded λ (None: the index's).

        ``mmap`` maps the arrays instead of reading them (pages load as searched).
        ``device`` (``"cuda"``, ``"cpu"``, …) searches with torch on that device
        (:meth:`on`); None searches with numpy.
        """
        folder = Path(folder)
        cfg = load_finished(folder, KIND, "DHR index (run `xqa index dhr`)")
        mode = "r" if mmap else None
        arrays: dict[str, object] = {}
        try:
            for name in ("lex_val", "lex_idx", "dense", "idf", "df"):
                arrays[name] = np.load(folder / f"{name}.npy", allow_pickle=False, mmap_mode=mode)
            arrays["ids"] = (folder / "ids.txt").read_text(encoding="utf-8").splitlines()
            arrays["langs"] = (folder / "langs.txt").read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError) as e:
            raise XqaError(f"{folder}: unreadable DHR index ({e})") from None
        n = len(arrays["ids"])
        if (arrays["lex_val"].shape != (cfg["slices"], n) or arrays["lex_idx"].shape != (cfg["slices"], n)
                or arrays["dense"].shape[0] != n or len(arrays["langs"]) != n):
            raise XqaError(f"{folder}: the index files disagree on the number of passages or slices")
        arrays["model_dir"] = resolve_ref(folder, cfg["model"], "encoder")
        out = cls(folder, cfg, arrays, cfg.get("lam", DEFAULT_LAMBDA) if lam is None else lam,
                  batch_size=batch_size)
        return out.on(device) if device else out

    # ------------------------------------------------------------------ views
    def with_lambda(self, lam: float) -> DhrRetriever:
        """The same retriever with dense weight ``lam`` (arrays, tokenizer and encoder shared)."""
        if not (lam >= 0 and np.isfinite(lam)):
            raise XqaError(f"λ must be finite and >= 0 (got {lam})")
        view = copy.copy(self)
        view.lam = float(lam)
        return view

    def on(self, device: str | None) -> DhrRetriever:
        """The same retriever searching with torch on ``device`` (None: numpy).

        The arrays are copied to the device once, on the first search, and shared
        by every view; scores equal the numpy path's up to float32 rounding (the
        dense part is an fp16 matmul on CUDA).
        """
        view = copy.copy(self)
        view.device = device
        if device and view.chunk == 262_144:
            view.chunk = 1 << 22
        return view

    def lexical(self) -> DhrRetriever:
        """DLR: GIP alone (source ``dlr``); searching it never loads the query encoder."""
        view = copy.copy(self)
        view.lex_weight, view.lam, view.source = 1.0, 0.0, "dlr"
        return view

    def dense_part(self) -> DhrRetriever:
        """The dense scores alone (source ``dense``): the dense retriever's ranking, fp16 vectors."""
        view = copy.copy(self)
        view.lex_weight, view.lam, view.source = 0.0, 1.0, "dense"
        return view

    # ------------------------------------------------------------------ parts
    def __len__(self) -> int:
        return len(self._arrays["ids"])

    @property
    def languages(self) -> list[str]:
        return sorted(self.config.get("languages", {}))

    @property
    def tokenizer(self):
        """The encoder's tokenizer: the loaded query encoder's own when there is one, else loaded alone."""
        if "tokenizer" not in self._arrays:
            enc = self._arrays.get("encoder")
            tok = enc.tokenizer if enc is not None else load_tokenizer(self._arrays["model_dir"])[0]
            self._arrays["tokenizer"] = tok
        return self._arrays["tokenizer"]

    @property
    def encoder(self):
        """The dense query encoder the dense index records (a BiEncoder: its int8 runtime when it has one)."""
        if "encoder" not in self._arrays:
            from retriever.dense.model import BiEncoder

            self._arrays["encoder"] = BiEncoder.load(self._arrays["model_dir"])
        return self._arrays["encoder"]

    def encode(self, texts: Sequence[str], dense: bool | None = None) -> QueryBatch:
        """Densified pieces and (when ``dense``, default: λ > 0) dense vectors of question texts."""
        texts = list(texts)
        a = self._arrays
        want = self.lam > 0 if dense is None else dense
        qd = None
        if want and texts:   # the encoder first: its tokenizer then serves the pieces too
            qd = np.asarray(self.encoder.encode_queries(texts, batch_size=self.batch_size), np.float32)
        val, idx = densify_queries(pieces(self.tokenizer, texts), a["idf"], a["df"], self.config["slices"],
                                   strided=self.config["strided"])
        return QueryBatch(val, idx, qd)

    # ------------------------------------------------------------------ search
    def scores(self, q: QueryBatch, rows: slice | None = None, lam: float | None = None) -> np.ndarray:
        """``w·GIP + λ·dense`` of queries against passage ``rows`` (default: all), ``[nq, rows]`` float32."""
        a = self._arrays
        lam = self.lam if lam is None else float(lam)
        rows = rows or slice(0, len(self))
        pv, pi = a["lex_val"][:, rows], a["lex_idx"][:, rows]
        width = pv.shape[1]
        out = np.zeros((len(q), width), dtype=np.float32)
        if self.lex_weight:
            nz_q, nz_s = np.nonzero(q.val)
            for s in np.unique(nz_s):
                qs = nz_q[nz_s == s]
                gate = pi[s][None, :] == q.idx[qs, s][:, None]              # [r, width]
                contrib = np.where(gate, pv[s].astype(np.float32)[None, :], np.float32(0))
                out[qs] += q.val[qs, s].astype(np.float32)[:, None] * contrib
            if self.lex_weight != 1.0:
                out *= np.float32(self.lex_weight)
        if lam:
            if q.dense is None:
                raise XqaError("these queries were encoded without dense vectors; encode with dense=True")
            # torch's product, not numpy's: OpenBLAS's threads keep spinning after a product and
            # slow the int8 encoder's threads on the next question (on 2 cores, encoding and
            # searching one question took up to twice the two apart)
            import torch

            qd = torch.from_numpy(np.ascontiguousarray(q.dense, np.float32))
            out += np.float32(lam) * (qd @ torch.from_numpy(self._dense_fp32(rows)).T).numpy()
        return out

    def _dense_fp32(self, rows: slice) -> np.ndarray:
        """The fp16 dense vectors of ``rows`` as float32. An index of up to
        :data:`DENSE_FP32_CACHE_BYTES` keeps one float32 copy (shared by every view), so a search
        does not convert the whole matrix again; a larger one converts the rows it scores."""
        a = self._arrays
        if "dense_fp32" not in a and a["dense"].size * 4 <= DENSE_FP32_CACHE_BYTES:
            a["dense_fp32"] = np.array(a["dense"], np.float32)       # a copy of its own (writable)
        if "dense_fp32" in a:
            return a["dense_fp32"][rows]
        return np.array(a["dense"][rows], np.float32)

    def search_encoded(self, q: QueryBatch, k: int, lam: float | None = None) -> list[list[Hit]]:
        """Global top-``k`` for encoded queries, with dense weight ``lam`` (default: this view's)."""
        k = check_k(k)
        n, nq = len(self), len(q)
        if nq == 0:
            return []
        kk = min(k, n)
        if kk == 0:
            return [[] for _ in range(nq)]
        if self.device:
            best_s, best_r = self._top_torch(q, kk, self.lam if lam is None else float(lam))
            return self._hits(best_s, best_r)
        best_s = np.full((nq, 0), -np.inf, np.float32)
        best_r = np.zeros((nq, 0), np.int64)
        for c0 in range(0, n, self.chunk):
            c1 = min(n, c0 + self.chunk)
            s = self.scores(q, slice(c0, c1), lam)
            r = np.broadcast_to(np.arange(c0, c1, dtype=np.int64), s.shape)
            s, r = np.concatenate([best_s, s], 1), np.concatenate([best_r, r], 1)
            if s.shape[1] > kk:
                part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
                s, r = np.take_along_axis(s, part, 1), np.take_along_axis(r, part, 1)
            best_s, best_r = s, r
        return self._hits(best_s, best_r)

    def _hits(self, best_s: np.ndarray, best_r: np.ndarray) -> list[list[Hit]]:
        ids, langs = self._arrays["ids"], self._arrays["langs"]
        out = []
        for i in range(len(best_s)):
            order = np.lexsort((best_r[i], -best_s[i]))   # score descending, then row
            out.append([Hit(ids[j], float(best_s[i, o]), self.source, langs[j])
                        for o in order for j in (int(best_r[i, o]),)])
        return out

    # ------------------------------------------------------------ torch search
    def _device_arrays(self):
        """``(lex_val, lex_idx, dense)`` as torch tensors on ``self.device`` (copied once, shared)."""
        import torch

        key = f"torch:{self.device}"
        if key not in self._arrays:
            a, dev = self._arrays, torch.device(self.device)
            idx = np.asarray(a["lex_idx"])
            if idx.dtype != np.uint8:          # torch compares uint8 and int32, not uint16
                idx = idx.astype(np.int32)
            dense_dtype = torch.float16 if dev.type == "cuda" else torch.float32
            self._arrays[key] = (torch.from_numpy(np.ascontiguousarray(a["lex_val"])).to(dev),
                                 torch.from_numpy(np.ascontiguousarray(idx)).to(dev),
                                 torch.from_numpy(np.ascontiguousarray(a["dense"])).to(dev, dense_dtype))
        return self._arrays[key]

    def _top_torch(self, q: QueryBatch, kk: int, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """The numpy path's top-``kk`` (scores, rows), computed with torch on ``self.device``: per
        block of passage columns, every (query, slice) pair in use gathers its slice's row and gates
        it against the query's position (one ``[pairs, columns]`` step), one matmul sums the pairs
        into their queries, another adds λ·dense, and a running ``topk`` keeps the best."""
        import torch

        tv, ti, td = self._device_arrays()
        dev, n, nq = tv.device, tv.shape[1], len(q)
        qv = torch.from_numpy(np.asarray(q.val, np.float32)).to(dev)
        qi = torch.from_numpy(np.asarray(q.idx).astype(np.uint8 if ti.dtype == torch.uint8 else np.int32)).to(dev)
        nz_q, nz_s = np.nonzero(q.val) if self.lex_weight else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        pq, ps = torch.from_numpy(nz_q.astype(np.int64)).to(dev), torch.from_numpy(nz_s.astype(np.int64)).to(dev)
        p_idx = qi[pq, ps][:, None]                                  # each (query, slice) pair in use
        # the pairs summed into their queries by one matmul: A[q, pair] = the pair's query value
        # (fp16 on CUDA, where tensor cores run it; float32 elsewhere, as the numpy path)
        mm_dtype = torch.float16 if dev.type == "cuda" else torch.float32
        a_pairs = torch.zeros((nq, len(nz_q)), device=dev, dtype=mm_dtype)
        a_pairs[pq, torch.arange(len(nz_q), device=dev)] = qv[pq, ps].to(mm_dtype)
        # columns per step: the [pairs, columns] temporaries stay near 2^28 elements on CUDA, 2^24 elsewhere
        budget = 1 << (28 if dev.type == "cuda" else 24)
        step = max(1, min(self.chunk, budget // max(1, len(nz_q))))
        qd = None
        if lam:
            if q.dense is None:
                raise XqaError("these queries were encoded without dense vectors; encode with dense=True")
            qd = torch.from_numpy(np.asarray(q.dense, np.float32)).to(dev, td.dtype)
        best_s = torch.full((nq, 0), -float("inf"), device=dev)
        best_r = torch.zeros((nq, 0), dtype=torch.long, device=dev)
        zero = torch.zeros((), device=dev, dtype=mm_dtype)
        with torch.inference_mode():
            for c0 in range(0, n, step):
                c1 = min(n, c0 + step)
                out = torch.zeros((nq, c1 - c0), device=dev)
                if len(nz_q):
                    gated = torch.where(ti[ps, c0:c1] == p_idx, tv[ps, c0:c1].to(mm_dtype), zero)
                    out += (a_pairs @ gated).float()                            # [nq, columns]
                if self.lex_weight != 1.0:
                    out *= self.lex_weight
                if qd is not None:
                    out += lam * (qd @ td[c0:c1].T).float()
                s_cat = torch.cat([best_s, out], 1)
                r_cat = torch.cat([best_r, torch.arange(c0, c1, device=dev).expand(nq, -1)], 1)
                top = s_cat.topk(min(kk, s_cat.shape[1]), dim=1)
                best_s, best_r = top.values, r_cat.gather(1, top.indices)
        return best_s.cpu().numpy(), best_r.cpu().numpy()

    def search(self, questions: Sequence[Question], k: int) -> list[list[Hit]]:
        """Global top-``k`` passages per question: scores descending, unique ids (batched)."""
        k = check_k(k)
        out: list[list[Hit]] = []
        for s in range(0, len(questions), self.batch_size):
            chunk = questions[s: s + self.batch_size]
            out.extend(self.search_encoded(self.encode([q.question for q in chunk]), k))
        return out


__all__ = ["DEFAULT_LAMBDA", "DEFAULT_SLICES", "KIND", "DhrRetriever", "QueryBatch", "build_dhr_index",
           "load_tokenizer", "passage_text", "pieces", "tokenizer_folder"]
