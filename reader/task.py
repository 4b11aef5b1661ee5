"""The FiD training task for ``xqa.training.train`` (duck-typed ``TrainTask``).

The loop owns the optimisation; this class says what a batch is (``FiDCollator``),
what the loss is (token cross-entropy of the gold answer given all passages),
how to validate (greedy decoding on dev, EM/F1 by an injected scorer) and how
to save (a ``FiDReader`` artifact). The scorer is injected so the reader
package needs nothing of ``xqa`` beyond the leaf modules; ``xqa train reader``
passes the official MIA scorer.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from reader.data import FiDCollator
from reader.evidence import normalize_answer
from reader.inference import FiDReader

# (prediction, gold answers, language) -> (EM, F1), both in [0, 1]
Scorer = Callable[[str, Sequence[str], str], "tuple[float, float]"]


def simple_score(prediction: str, answers: Sequence[str], lang: str) -> tuple[float, float]:
    """Normalised EM and white-space token F1 (max over gold answers); a fallback scorer."""
    from collections import Counter

    pred = normalize_answer(prediction).split()
    best_em = best_f1 = 0.0
    for gold in answers:
        g = normalize_answer(gold).split()
        best_em = max(best_em, float(pred == g))
        shared = sum((Counter(pred) & Counter(g)).values())
        if shared:
            p, r = shared / len(pred), shared / len(g)
            best_f1 = max(best_f1, 2 * p * r / (p + r))
    return best_em, best_f1


def score_predictions(examples: Sequence[Mapping[str, Any]], predictions: Sequence[str],
                      scorer: Scorer = simple_score) -> dict[str, float]:
    """Mean EM/F1 over questions with a gold answer, plus the macro average over languages."""
    per_lang: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for ex, pred in zip(examples, predictions):
        if ex.get("answers"):
            per_lang[ex.get("lang", "")].append(scorer(pred, ex["answers"], ex.get("lang", "")))
    flat = [s for v in per_lang.values() for s in v]
    if not flat:
        return {}
    out = {"em": sum(e for e, _ in flat) / len(flat), "f1": sum(f for _, f in flat) / len(flat)}
    out["macro_f1"] = sum(sum(f for _, f in v) / len(v) for v in per_lang.values()) / len(per_lang)
    return out


class FiDTask:
    """Plug a :class:`FiDReader` into the shared training loop."""

    metric = "f1"

    def __init__(self, reader: FiDReader, collator: FiDCollator,
                 dev_examples: Sequence[Mapping[str, Any]] = (), scorer: Scorer = simple_score,
                 eval_batch_size: int = 16, eval_beams: int = 1):
        self.reader, self.collator = reader, collator
        self.dev_examples, self.scorer = list(dev_examples), scorer
        self.eval_batch_size, self.eval_beams = eval_batch_size, eval_beams

    @property
    def model(self) -> torch.nn.Module:
        return self.reader.model

    def collate(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        return self.collator(examples)

    def length(self, example: Mapping[str, Any]) -> int:
        """Characters of the example's longest encoder row (for length-grouped batches)."""
        q = len(example["question"]) + len(example.get("lang", ""))
        rows = list(zip(example["titles"], example["texts"]))[: self.collator.n_context]
        return q + max((len(t) + len(x) for t, x in rows), default=0)

    def loss(self, model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean token cross-entropy; ``model`` is the FiD module or its DDP wrapper."""
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     passage_mask=batch["passage_mask"], labels=batch["labels"]).loss

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """EM/F1 of greedy (or ``eval_beams``) answers on the dev examples; {} without dev."""
        if not self.dev_examples:
            return {}
        self.reader.device = next(self.reader.model.parameters()).device
        outputs = self.reader.read_examples(self.dev_examples, n_context=self.collator.n_context,
                                            beams=self.eval_beams, n_best=1,
                                            batch_size=self.eval_batch_size)
        return score_predictions(self.dev_examples, [o.text for o in outputs], self.scorer)

    def save(self, model: torch.nn.Module, folder: Path) -> None:
        self.reader.n_context = self.collator.n_context
        self.reader.write_to(folder)

    def enable_gradient_checkpointing(self) -> None:
        self.reader.model.t5.gradient_checkpointing_enable()
