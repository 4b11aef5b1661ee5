"""Training task of the BM25 query augmentation (Chen & Wiseman 2023, "BM25 Query Augmentation
Learned End-to-End") for xqa's shared training loop (duck-typed against ``xqa.training.TrainTask``).

A batch of ``B`` questions holds ``B·(1+h)`` documents: each question's
positive (sampled from its positives) and ``h`` BM25 hard negatives (sampled
from its ``negative_ids``, topped up with random passages). Every question is
scored against every document of the batch with the augmented BM25 of
:mod:`.model`, over the collection statistics of :class:`.pieces.CollectionStats`
(the documents are never encoded: ``f(d)`` is a sparse row)::

    loss = CE(softmax over the batch's documents, the question's positive)
           + λ · mean_q( sqrt(h)ᵀ a(q) ),   h_i = df_i / N

Other positives of the question in the batch are masked out of its softmax.

Validation ranks each dev question's positives in a mini-corpus (the dev
questions' positives and BM25 negatives) with the query a search sends to
Lucene (its own pieces plus the ``top_terms`` largest augmentation entries),
and reports the same metrics for plain BM25 over pieces (``a = 0``, ``w = 1``)
under ``bm25_*``.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from xqa.errors import XqaError

from .model import AugmentationModel
from .pieces import CollectionStats


@dataclass
class TaskConfig:
    hard_negatives: int = 3       # h: BM25 negatives per question in a batch
    reg: float = 0.01             # λ of the df-weighted L1 penalty on a(q)
    top_terms: int = 32           # augmentation pieces a search (and validation) keeps
    dev_questions: int = 1000     # validation: at most this many dev questions
    dev_negatives: int = 8        # validation: BM25 negatives per dev question in the mini-corpus
    head_lr_scale: float = 100.0  # the heads (u, c, bias) learn this many times faster than the encoder
    seed: int = 0


def rank_metrics(scores: np.ndarray, positives: Sequence[Sequence[int]], ks=(1, 5, 20)) -> dict[str, float]:
    """MRR and R@k where a question's rank is that of its best-ranked positive (ties count against it)."""
    rr, hits = [], {k: [] for k in ks}
    for i, pos in enumerate(positives):
        row = scores[i]
        best = row[list(pos)].max()
        rank = int((row > best).sum()) + int((row == best).sum()) - int((row[list(pos)] == best).sum()) + 1
        rr.append(1.0 / rank)
        for k in ks:
            hits[k].append(rank <= k)
    n = max(1, len(rr))
    out = {"mrr": float(sum(rr) / n)}
    out.update({f"r@{k}": float(sum(v) / n) for k, v in hits.items()})
    return out


class AugmentTask:
    """Contrastive training of an :class:`AugmentationModel` against BM25 over pieces."""

    metric = "mrr"

    def __init__(self, model: AugmentationModel, stats: CollectionStats, rows: Mapping[str, int],
                 dev: Sequence[dict] = (), config: TaskConfig | None = None):
        """``stats``: the collection's statistics, one row per passage; ``rows``: passage id → row;
        ``dev``: examples ``{"question", "positive_ids", "negative_ids"}``."""
        self.model, self.stats, self.rows = model, stats, rows
        self.config = config or TaskConfig()
        if stats.vocab_size != model.vocab_size:
            raise XqaError(f"collection statistics over {stats.vocab_size} pieces, the model has {model.vocab_size}")
        self.idf = torch.from_numpy(stats.idf.astype(np.float32))
        self.sqrt_h = torch.from_numpy(np.sqrt(stats.df / stats.n_docs).astype(np.float32))
        self._pool = list(rows)
        self.dev = [ex for ex in dev if any(p in rows for p in ex["positive_ids"])][: self.config.dev_questions]
        self._mini = self._build_mini_corpus() if self.dev else None
        self._baseline = self._baseline_metrics() if self._mini else {}

    def param_groups(self, model: torch.nn.Module, weight_decay: float, lr: float) -> list[dict]:
        """The encoder at ``lr`` (matrices decayed), the heads ``u``, ``c``, ``bias`` at
        ``lr · head_lr_scale`` without decay: at an encoder's learning rate they barely move
        from ``w = 1``, and at theirs the encoder collapses to one output for every question."""
        m: AugmentationModel = getattr(model, "module", model)
        heads = {id(m.u), id(m.c), id(m.bias)}
        decay, no_decay = [], []
        for p in m.encoder.parameters():
            if p.requires_grad and id(p) not in heads:
                (no_decay if p.ndim < 2 else decay).append(p)
        return [{"params": decay, "weight_decay": weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
                {"params": [m.u, m.c, m.bias], "weight_decay": 0.0, "lr": lr * self.config.head_lr_scale}]

    # ---------------------------------------------------------------- batches
    def collate(self, examples: list[dict]) -> dict[str, Any]:
        """Tokenized questions, the batch's documents as sparse rows, targets and positive masks."""
        h = self.config.hard_negatives
        doc_rows: list[int] = []
        positive, pos_sets = [], []
        for ex in examples:
            pos_list = [p for p in ex["positive_ids"] if p in self.rows]
            if not pos_list:
                raise XqaError(f"question {ex.get('id', ex['question'])!r}: none of its positives is in the passages")
            pos = random.choice(pos_list)
            negs = [p for p in ex.get("negative_ids", ()) if p in self.rows and p not in pos_list]
            chosen = random.sample(negs, h) if len(negs) >= h else negs + self._random(h - len(negs),
                                                                                       set(pos_list) | set(negs))
            positive.append(len(doc_rows))
            doc_rows.append(self.rows[pos])
            doc_rows.extend(self.rows[p] for p in chosen)
            pos_sets.append({self.rows[p] for p in pos_list})
        pos_mask = torch.tensor([[r in s for r in doc_rows] for s in pos_sets], dtype=torch.bool)
        sub = self.stats.tf_weights[doc_rows].tocoo()
        enc = self.model.tokenize([ex["question"] for ex in examples])
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                "doc_row": torch.from_numpy(sub.row.astype(np.int64)),
                "doc_col": torch.from_numpy(sub.col.astype(np.int64)),
                "doc_val": torch.from_numpy(sub.data.astype(np.float32)),
                "n_docs": torch.tensor(len(doc_rows)),
                "positive": torch.tensor(positive, dtype=torch.long), "pos_mask": pos_mask}

    def _random(self, n: int, exclude: set[str]) -> list[str]:
        from retriever.dense.task import random_negatives

        return random_negatives(self._pool, n, exclude)

    def scores(self, qvec: torch.Tensor, batch: dict[str, Any]) -> torch.Tensor:
        """``[B, M]`` augmented BM25 of query boosts ``qvec`` ``[B, V]`` against the batch's documents."""
        qv = qvec * self.idf.to(qvec.device)
        contrib = qv[:, batch["doc_col"]] * batch["doc_val"]  # [B, nnz]
        out = torch.zeros(qv.shape[0], int(batch["n_docs"]), device=qv.device, dtype=qv.dtype)
        return out.index_add(1, batch["doc_row"], contrib)

    def loss(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        m: AugmentationModel = getattr(model, "module", model)
        qvec, a = m.query_vectors(batch["input_ids"], batch["attention_mask"])
        s = self.scores(qvec, batch)
        target = batch["positive"]
        others = batch["pos_mask"].clone()
        others[torch.arange(len(target)), target] = False
        s = s.masked_fill(others, float("-inf"))
        ce = torch.nn.functional.cross_entropy(s, target)
        reg = (a * self.sqrt_h.to(a.device)).sum(dim=1).mean()
        return ce + self.config.reg * reg

    # -------------------------------------------------------------- validation
    def _build_mini_corpus(self) -> tuple[list[int], list[list[int]]]:
        rng = random.Random(self.config.seed)
        cols: dict[int, int] = {}
        for ex in self.dev:
            negs = [p for p in ex.get("negative_ids", ()) if p in self.rows][: self.config.dev_negatives]
            while len(negs) < self.config.dev_negatives and len(self._pool) > len(negs) + len(ex["positive_ids"]):
                c = rng.choice(self._pool)
                if c not in negs and c not in ex["positive_ids"]:
                    negs.append(c)
            for pid in [p for p in ex["positive_ids"] if p in self.rows] + negs:
                cols.setdefault(self.rows[pid], len(cols))
        positives = [[cols[self.rows[p]] for p in ex["positive_ids"] if p in self.rows] for ex in self.dev]
        return list(cols), positives

    def _mini_scores(self, qvecs: np.ndarray) -> np.ndarray:
        rows, _ = self._mini
        sub = self.stats.tf_weights[rows]
        return np.asarray(sub @ (qvecs * self.stats.idf[None, :]).T).T

    def _baseline_metrics(self) -> dict[str, float]:
        from .pieces import piece_ids

        _, positives = self._mini
        ids = piece_ids(self.model.tokenizer, [ex["question"] for ex in self.dev])
        q = np.zeros((len(ids), self.stats.vocab_size), dtype=np.float32)
        for i, row in enumerate(ids):
            np.add.at(q[i], row, 1.0)
        return {f"bm25_{k}": v for k, v in rank_metrics(self._mini_scores(q), positives).items()}

    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """MRR and R@1/5/20 on the dev mini-corpus, with plain BM25 over pieces's beside them."""
        if self._mini is None:
            return {}
        m: AugmentationModel = getattr(model, "module", model)
        _, positives = self._mini
        device = m.bias.device
        scores, terms = [], []
        texts = [ex["question"] for ex in self.dev]
        for s in range(0, len(texts), 64):
            enc = m.tokenize(texts[s:s + 64])
            q, _ = m.query_vectors(enc["input_ids"].to(device), enc["attention_mask"].to(device),
                                   self.config.top_terms)
            q = q.float().cpu().numpy()
            terms.extend((q > 0).sum(axis=1).tolist())
            scores.append(self._mini_scores(q))
        out = rank_metrics(np.concatenate(scores), positives)
        out["query_terms"] = float(np.mean(terms))
        return {**out, **self._baseline}

    def save(self, model: torch.nn.Module, folder) -> None:
        getattr(model, "module", model).write(folder)

    def enable_gradient_checkpointing(self) -> None:
        self.model.encoder.gradient_checkpointing_enable()


__all__ = ["AugmentTask", "TaskConfig", "rank_metrics"]
