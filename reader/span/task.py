"""The span reader's training task for ``xqa.training.train`` (duck-typed ``TrainTask``).

A training example (one JSONL line of ``xqa data train``)::

    {"id", "question", "lang", "answers": [str], "answer_starts": [int],
     "positive_ids": [passage id], "negative_ids": [passage ids, e.g. BM25's top hits]}

A batch of B questions holds B·K rows: each question's gold window first (a window of its
positive passage that holds an answer), then K-1 negative windows (passages from its
``negative_ids``, topped up with random passages of its language). The loss (Ma et al. 2022,
"Another Look at DPR", §2.2):

- passage selection: cross-entropy of the gold row among the question's K relevance scores;
- span: -log Σ_{s in starts} p_start(s) - log Σ_{e in ends} p_end(e) on the gold row, the
  softmaxes over its text tokens, marginalised over every occurrence of every answer.

Validation: gold-passage EM/F1 of the best span (the injected scorer; ``xqa train reader``
passes the official MIA one).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from reader.scoring import Scorer, score_predictions
from reader.span.data import Encoded, Window, answer_token_spans, encode, pad_rows, windows
from reader.span.inference import SpanReader
from reader.span.model import SpanModel
from xqa.records import Context, Passage, Question


class SpanTask:
    metric = "f1"
    cpu_bf16 = True   # the loop may use bf16 autocast on CPUs with native bf16

    def __init__(self, reader: SpanReader, passages: Mapping[str, Passage], negatives: int = 1,
                 dev: Sequence[Mapping[str, Any]] = (), scorer: Scorer | None = None,
                 dev_questions: int = 300):
        self.reader = reader
        self.model: SpanModel = reader.model
        self.passages = passages
        self.negatives = negatives
        self.scorer = scorer
        self.dev = list(dev)[:dev_questions]
        self._enc: dict[str, tuple[Encoded, Encoded]] = {}
        self._by_lang: dict[str, list[str]] = {}
        for pid, p in passages.items():
            self._by_lang.setdefault(p.lang, []).append(pid)

    # ---------------------------------------------------------------- batches
    def _passage(self, pid: str) -> tuple[Encoded, Encoded]:
        if pid not in self._enc:
            p = self.passages[pid]
            self._enc[pid] = tuple(encode(self.reader.tokenizer, [p.title or "", p.text]))
        return self._enc[pid]

    def length(self, ex: Mapping[str, Any]) -> int:
        """Characters of the gold passage (to batch rows of similar length)."""
        p = self.passages.get(ex["positive_ids"][0])
        return len(p.text) if p else 0

    def _gold_row(self, q: Encoded, ex: Mapping[str, Any]) -> tuple[Window, list[int], list[int]]:
        pid = ex["positive_ids"][0]
        title, text = self._passage(pid)
        spans = answer_token_spans(self.passages[pid].text, text, list(ex["answers"]),
                                   list(ex.get("answer_starts") or []))
        wins = windows(q, title, text, self.reader.cls_id, self.reader.sep_id, self.reader.settings.layout)
        holding = [(w, [(s, e) for s, e in spans if w.first <= s and e < w.first + w.n]) for w in wins]
        holding = [(w, sp) for w, sp in holding if sp]
        if not holding:
            return wins[0], [], []
        w, sp = random.choice(holding)
        return w, sorted({w.text_start + s - w.first for s, _ in sp}), sorted({w.text_start + e - w.first for _, e in sp})

    def _negative_ids(self, ex: Mapping[str, Any]) -> list[str]:
        need = self.negatives
        own = set(ex["positive_ids"])
        pool = [p for p in ex.get("negative_ids", []) if p in self.passages and p not in own]
        chosen = random.sample(pool, min(need, len(pool)))
        same_lang = self._by_lang.get(ex.get("lang", ""), []) or list(self.passages)
        tries = 0
        while len(chosen) < need and tries < 50:
            c = random.choice(same_lang)
            tries += 1
            if c not in own and c not in chosen:
                chosen.append(c)
        while len(chosen) < need:   # a pool of one passage: repeat it (still a valid shape)
            chosen.append(random.choice(list(self.passages)))
        return chosen

    def collate(self, examples: list[Mapping[str, Any]]) -> dict[str, Any]:
        K = 1 + self.negatives
        rows, starts, ends = [], [], []
        q_enc = encode(self.reader.tokenizer, [ex["question"] for ex in examples])
        for q, ex in zip(q_enc, examples):
            w, s, e = self._gold_row(q, ex)
            rows.append(w)
            starts.append(s)
            ends.append(e)
            for pid in self._negative_ids(ex):
                title, text = self._passage(pid)
                rows.append(random.choice(windows(q, title, text, self.reader.cls_id, self.reader.sep_id,
                                                  self.reader.settings.layout)))
        return span_batch([w.ids for w in rows], [(w.text_start, w.n) for w in rows], starts, ends, K,
                          self.reader.pad_id)

    def loss(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        return span_loss(model, batch)

    # ------------------------------------------------------------- validation
    @torch.no_grad()
    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Gold-passage EM/F1 of the best span on the dev questions."""
        if not self.dev or self.scorer is None:
            return {}
        was = self.reader.model
        self.reader.model = getattr(model, "module", model)
        try:
            qs = [Question(id=str(ex["id"]), question=ex["question"], lang=ex.get("lang", "")) for ex in self.dev]
            ctxs = [[_context(self.passages[ex["positive_ids"][0]])] for ex in self.dev]
            outs = self.reader.read(qs, ctxs, n_best=1)
        finally:
            self.reader.model = was
        return score_predictions(self.dev, [o.text for o in outs], self.scorer)

    def save(self, model: torch.nn.Module, folder) -> None:
        self.reader.model = getattr(model, "module", model)
        self.reader.write_to(folder)

    def enable_gradient_checkpointing(self) -> None:
        self.model.encoder.gradient_checkpointing_enable()


def span_batch(rows: list[list[int]], text: list[tuple[int, int]], starts: list[list[int]],
               ends: list[list[int]], k: int, pad_id: int) -> dict[str, Any]:
    """The tensors of a batch of B questions × ``k`` rows (each question's gold row first): ids and
    mask padded, each row's text tokens (``text``: first token, count), and the gold rows' answer
    start and end tokens."""
    batch = pad_rows(rows, pad_id)
    B, L = len(rows) // k, batch["input_ids"].shape[1]
    text_mask = torch.zeros((B * k, L), dtype=torch.bool)
    for i, (first, n) in enumerate(text):
        text_mask[i, first: first + n] = True
    start_t = torch.zeros((B, L), dtype=torch.bool)
    end_t = torch.zeros((B, L), dtype=torch.bool)
    for i, (s, e) in enumerate(zip(starts, ends)):
        start_t[i, s] = True
        end_t[i, e] = True
    return {**batch, "text_mask": text_mask, "start_targets": start_t, "end_targets": end_t,
            "k": torch.tensor(k)}


def span_loss(model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
    """The loss of a batch of B questions × K rows (see the module doc)."""
    start, end, rel = model(batch["input_ids"], batch["attention_mask"])   # [B*K, L], [B*K]
    K = int(batch["k"])
    B = rel.shape[0] // K
    rank = F.cross_entropy(rel.view(B, K), torch.zeros(B, dtype=torch.long, device=rel.device))
    gold = torch.arange(B, device=rel.device) * K
    mask = batch["text_mask"][gold]                                        # [B, L]
    has = batch["start_targets"].any(1)                                    # questions with a span
    span = start.new_zeros(())
    if bool(has.any()):
        for logits, targets in ((start[gold], batch["start_targets"]), (end[gold], batch["end_targets"])):
            lp = logits.float().masked_fill(~mask, float("-inf")).log_softmax(-1)
            picked = torch.logsumexp(lp.masked_fill(~targets, float("-inf")), -1)   # [B]
            span = span - picked[has].mean()
    return rank + span


def load_training_questions(path: str, limit: int = 0, per_source: int = 0, seed: int = 0,
                            passages: Mapping[str, Passage] | None = None, role: str = "training") -> list[dict]:
    """The questions of an ``xqa data train`` file (``train.jsonl``/``dev.jsonl``); a line without
    a question, answers or paragraph is an :class:`~xqa.errors.InputError` naming it. ``per_source``:
    at most that many questions of one source set, sampled with ``seed``. With ``passages``, each
    question's paragraph (``positive_ids[0]``) must be among them and hold one of its answers: the
    lines that fail are listed together (file:line), since such a question would train the reader
    to find an answer where there is none (``role``: what the questions are for, as said then)."""
    from collections import defaultdict

    from xqa.errors import InputError, XqaError

    from xqa.io import jsonl_objects

    made = "make training data with 'xqa data train', or from QA files of your own with 'xqa data own'"
    rows, problems = [], []
    try:
        for n, obj in jsonl_objects(path):
            for key in ("question", "answers", "positive_ids"):
                if key not in obj:
                    raise InputError(path, n, f"missing field {key!r} ({made})")
            if not isinstance(obj["answers"], list) or not obj["answers"]:
                raise InputError(path, n, "field 'answers' should be a non-empty list")
            if not isinstance(obj["positive_ids"], list) or not obj["positive_ids"]:
                raise InputError(path, n, "field 'positive_ids' should be a non-empty list")
            if passages is not None:
                pid = obj["positive_ids"][0]
                if pid not in passages:
                    problems.append(f"{path}:{n}: its paragraph {pid!r} is not in the passages file")
                elif not any(isinstance(a, str) and a.strip() and a.strip() in passages[pid].text
                             for a in obj["answers"]):
                    problems.append(f"{path}:{n}: none of its answers ({', '.join(map(repr, obj['answers'][:3]))}) "
                                    f"is in its paragraph {pid!r}")
            rows.append(obj)
    except InputError as e:
        if e.line == 1 and str(path).endswith(".json") and "invalid JSON" in str(e):
            raise InputError(path, 1, f"{str(e).split(': ', 1)[1]}; training data is JSONL, a question a line: "
                                      f"turn a SQuAD JSON file of your own into it with 'xqa data own'") from None
        raise
    if problems:
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        use = "trained on" if role == "training" else f"used as {role} questions"
        raise XqaError(f"{len(problems)} of {len(rows)} {role} questions cannot be {use} ({made}; each "
                       f"question's answer must be in its paragraph):\n  " + "\n  ".join(problems[:20]) + more)
    if per_source:
        by: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            by[r.get("source", "")].append(r)
        rng = random.Random(seed)
        rows = [r for src in sorted(by) for r in (rng.sample(by[src], per_source) if len(by[src]) > per_source
                                                  else by[src])]
        rng.shuffle(rows)
    return rows[:limit] if limit else rows


def _context(p: Passage) -> Context:
    return Context(id=p.id, title=p.title, text=p.text, lang=p.lang, score=0.0, source="gold")
