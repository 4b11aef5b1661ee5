"""DHR search at scale: one exact pass of ``GIP + λ·dense`` over synthetic passages.

The arrays have the real index's shapes and dtypes (slice-major ``[M, n]``
float16 maxima and uint8 positions, ``[n, d]`` float16 dense vectors) and its
sparsity (about 97 non-zero slices per passage on the shipped corpus, 12 per
question), so the time is what :class:`retriever.dhr.DhrRetriever` spends on a
pool of that size: the same ``search_encoded`` runs, with numpy or with torch
on a device. The query encoder is not part of it (``xqa bench fusion`` times
DHR with it on a real index).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class Row:
    passages: int
    path: str              # "numpy" or the torch device
    device_name: str
    index_gib: float
    load_s: float          # arrays onto the device (0 for numpy)
    ms_per_query: dict[str, float] = field(default_factory=dict)   # view → ms per query (batched)


class _Ids:
    """Passage ids ``p0 … p{n-1}`` without a list of n strings."""

    def __init__(self, n: int, prefix: str = "p"):
        self.n, self.prefix = n, prefix

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j: int) -> str:
        return f"{self.prefix}{j}"


def synthetic_arrays(n: int, slices: int, width: int, dim: int, per_passage: float, seed: int,
                     device: str = "cpu", chunk: int = 1 << 18):
    """``(lex_val [M, n] f16, lex_idx [M, n] u8, dense [n, d] f16)`` as torch tensors on ``device``."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    val = torch.empty((slices, n), dtype=torch.float16, device=device)
    idx = torch.empty((slices, n), dtype=torch.uint8, device=device)
    dense = torch.empty((n, dim), dtype=torch.float16, device=device)
    p = per_passage / slices
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        u = torch.rand((slices, c1 - c0), generator=g, device=device)
        val[:, c0:c1] = torch.where(u < p, u / p * 8.0, torch.zeros((), device=device)).half()
        idx[:, c0:c1] = torch.randint(0, width, (slices, c1 - c0), generator=g, device=device,
                                      dtype=torch.int32).to(torch.uint8)
        d = torch.randn((c1 - c0, dim), generator=g, device=device)
        dense[c0:c1] = torch.nn.functional.normalize(d, dim=1).half()
    return val, idx, dense


def synthetic_queries(nq: int, slices: int, width: int, dim: int, per_query: int, seed: int):
    from retriever.dhr.index import QueryBatch

    rng = np.random.default_rng(seed)
    val = np.zeros((nq, slices), np.float16)
    for i in range(nq):
        val[i, rng.choice(slices, size=per_query, replace=False)] = 1.0
    idx = rng.integers(0, width, size=(nq, slices)).astype(np.uint8)
    dense = rng.standard_normal((nq, dim)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    return QueryBatch(val, idx, dense)


def _sync(path: str) -> None:
    if path.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def bench_one(n: int, path: str, *, slices: int, vocab: int, dim: int, per_passage: float, per_query: int,
              queries: int, batch: int, k: int, lam: float, seed: int, repeats: int = 1) -> Row:
    """Time ``dlr``, ``dense`` and ``dhr`` views on ``n`` synthetic passages with ``path``
    (``numpy`` or a torch device)."""
    import torch

    from retriever.dhr.densify import slice_shape
    from retriever.dhr.index import DhrRetriever

    m, width = slice_shape(vocab, slices)
    gen_on = path if path != "numpy" else "cpu"
    val, idx, dense = synthetic_arrays(n, m, width, dim, per_passage, seed, device=gen_on)
    config = {"slices": m, "slice_dims": width, "strided": False, "vocab_size": vocab}
    if path == "numpy":
        arrays = {"lex_val": val.numpy(), "lex_idx": idx.numpy(), "dense": dense.numpy()}
    else:   # already on the device: hand the tensors over as the retriever's device copy
        if not path.startswith("cuda"):
            dense = dense.float()       # as DhrRetriever keeps it off CUDA
        arrays = {"lex_val": np.zeros((m, 0), np.float16), "lex_idx": np.zeros((m, 0), np.uint8),
                  "dense": np.zeros((0, dim), np.float16), f"torch:{path}": (val, idx, dense)}
    arrays.update(ids=_Ids(n), langs=_Ids(n, "xx"))
    base = DhrRetriever(None, config, arrays, lam, device=None if path == "numpy" else path)
    if path != "numpy":
        base = base.on(path)
    gib = (m * n * 3 + n * dim * 2) / 2 ** 30
    name = path
    if path.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(path))
    elif path in ("numpy", "cpu"):
        import platform

        name = platform.processor() or platform.machine()
    row = Row(n, path, name, round(gib, 3), 0.0)
    qs = synthetic_queries(queries, m, width, dim, per_query, seed + 1)
    views = {"dlr": base.lexical(), "dense": base.dense_part(), "dhr": base}
    for view_name, view in views.items():
        from retriever.dhr.index import QueryBatch

        first = QueryBatch(qs.val[:batch], qs.idx[:batch], qs.dense[:batch])
        view.search_encoded(first, k)     # warm-up (kernels, caches)
        _sync(path)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for s in range(0, queries, batch):
                view.search_encoded(QueryBatch(qs.val[s:s + batch], qs.idx[s:s + batch], qs.dense[s:s + batch]), k)
            _sync(path)
            best = min(best, time.perf_counter() - t0)
        row.ms_per_query[view_name] = round(best * 1000 / queries, 4)
    del arrays, base, views, val, idx, dense
    if path.startswith("cuda"):
        torch.cuda.empty_cache()
    return row


@dataclass
class Result:
    rows: list[Row]
    settings: dict

    def table(self) -> str:
        lines = ["| passages | path | device | index GiB | dlr ms/q | dense ms/q | dhr ms/q | dhr queries/s |",
                 "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in self.rows:
            t = r.ms_per_query
            lines.append(f"| {r.passages:,} | {r.path} | {r.device_name} | {r.index_gib:.2f} | {t['dlr']:.3f} | "
                         f"{t['dense']:.3f} | {t['dhr']:.3f} | {1000 / t['dhr']:,.0f} |")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"settings": self.settings, "rows": [asdict(r) for r in self.rows]}


__all__ = ["Result", "Row", "bench_one", "synthetic_arrays", "synthetic_queries"]
